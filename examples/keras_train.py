"""The documentation's Keras example: a small Keras model trained for two epochs on
synthetic data, with the JAX backend, returning its final loss and a checksum of its weights.

Shows: a requirements.txt next to the script that lists `keras` (and, as many projects
do, a `jax==...` pin, which Kinetic drops: the job gets the jax of Kinetic's runtime, or
the version a `# kn:keep` line keeps); nothing in the function chooses the backend:
Kinetic sets KERAS_BACKEND=jax for the job unless you set it yourself.
Needs: jax and keras wheels for pip (the network to PyPI once, cached by pip, or a
       wheel directory named by --no-index / --find-links lines in requirements.txt).
Run:   it ships its working directory with the requirements.txt there, so from a directory
       of its own (pip needs the network, or `--no-index` and `--find-links DIR` lines):
       mkdir /tmp/keras-demo && cp examples/keras_train.py /tmp/keras-demo && cd /tmp/keras-demo
       printf 'keras\\njax==0.4.25\\n' > requirements.txt
       PYTHONPATH=REPO/python python3 keras_train.py     # EXAMPLE_ACCELERATOR=... (cpu by default)
"""

import math
import os

import kinetic

EPOCHS = 2


@kinetic.run(accelerator=os.environ.get("EXAMPLE_ACCELERATOR", "cpu"))
def train(epochs=EPOCHS, seed=0):
    import sys

    import jax
    import keras
    import numpy as np

    print(f"KERAS_BACKEND={os.environ.get('KERAS_BACKEND')} keras {keras.__version__} "
          f"backend {keras.backend.backend()} jax {jax.__version__} on {jax.devices()[0].platform} "
          f"python {'%d.%d' % sys.version_info[:2]}", flush=True)
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(512, 8)).astype("float32")
    true_w = rng.normal(size=(8, 1)).astype("float32")
    y = x @ true_w + 0.1 * rng.normal(size=(512, 1)).astype("float32")

    model = keras.Sequential([
        keras.Input(shape=(8,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(1),
    ])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="mse")
    history = model.fit(x, y, epochs=epochs, batch_size=32, verbose=2)
    checksum = float(sum(float(np.abs(np.asarray(w)).sum()) for w in model.get_weights()))
    return {
        "loss": float(history.history["loss"][-1]),
        "first_loss": float(history.history["loss"][0]),
        "epochs": len(history.history["loss"]),
        "checksum": checksum,
        "backend": keras.backend.backend(),
        "keras_backend_env": os.environ.get("KERAS_BACKEND"),
        "keras": keras.__version__,
        "jax": jax.__version__,
        "python": "%d.%d" % sys.version_info[:2],
    }


def main():
    r = train()
    print(f"trained {r['epochs']} epochs with keras {r['keras']} on {r['backend']} "
          f"(KERAS_BACKEND={r['keras_backend_env']}), jax {r['jax']}, python {r['python']}")
    print(f"final loss {r['loss']:.6f} (first epoch {r['first_loss']:.6f}), weights checksum {r['checksum']:.6f}")
    assert r["epochs"] == EPOCHS, r
    assert math.isfinite(r["loss"]) and math.isfinite(r["checksum"]), r
    assert r["backend"] == "jax", r
    return r


if __name__ == "__main__":
    main()
