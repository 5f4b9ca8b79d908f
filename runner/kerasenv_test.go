package runner

import (
	"os"
	"slices"
	"testing"
)

// TestCallEnvKerasBackend: a call runs with KERAS_BACKEND=jax unless its environment
// (the pod's or this machine's) or a captured variable names a backend.
func TestCallEnvKerasBackend(t *testing.T) {
	t.Setenv("KERAS_BACKEND", "")
	if env := callEnv(nil, nil, false); !slices.Contains(env, "KERAS_BACKEND=") {
		t.Errorf("an empty KERAS_BACKEND of the environment was replaced: %v", env)
	}
	t.Setenv("KERAS_BACKEND", "torch")
	if env := callEnv(nil, nil, false); !slices.Contains(env, "KERAS_BACKEND=torch") {
		t.Errorf("the environment's KERAS_BACKEND was not kept")
	}
	if env := callEnv(map[string]string{"KERAS_BACKEND": "tensorflow"}, nil, false); !slices.Contains(env, "KERAS_BACKEND=tensorflow") {
		t.Errorf("a captured KERAS_BACKEND did not win")
	}
	unsetenv(t, "KERAS_BACKEND")
	if env := callEnv(nil, nil, false); !slices.Contains(env, "KERAS_BACKEND=jax") {
		t.Errorf("no KERAS_BACKEND=jax by default")
	}
}

// unsetenv removes key for the test, restoring it after.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "") // restores the old value at the end
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
