package config_test

import (
	"fmt"

	"github.com/kinetic-run/kinetic/config"
)

func ExampleResolve() {
	env := map[string]string{"HOME": "/home/ada", "KINETIC_ZONE": "europe-west4-a", "GOOGLE_CLOUD_PROJECT": "ada-ml"}
	r, err := config.Resolve(config.Options{
		Args:   map[config.Key]string{config.Backend: "k8s"},
		Getenv: func(k string) string { return env[k] },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range []config.Key{config.Project, config.Zone, config.Backend, config.Store} {
		fmt.Printf("%s=%s (%s)\n", k, r.Get(k), r.Source(k))
	}
	// Output:
	// project=ada-ml (env GOOGLE_CLOUD_PROJECT)
	// zone=europe-west4-a (env KINETIC_ZONE)
	// backend=k8s (argument)
	// store=file:///home/ada/.local/share/kinetic/store (default)
}
