package deps_test

import (
	"fmt"
	"os"

	"github.com/kinetic-run/kinetic/deps"
)

func Example() {
	reqs, err := deps.ParseRequirements("requirements.txt", []byte(`
--extra-index-url https://my-org.example.com/simple
Keras >= 3        # the model code
jax[tpu]>=0.4     # dropped: the container's jax matches its TPU
numpy==1.26.4 \
    ; python_version >= "3.10"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	kept, dropped := reqs.Filtered()
	fmt.Fprint(os.Stdout, deps.DroppedMessage(dropped, true))
	for _, l := range kept.Lines() {
		fmt.Println(l)
	}
	fmt.Println(len(deps.EnvKey(kept, "python:3.11-slim", "tpu", "v0.1.0")))
	// Output:
	// kinetic: ignoring 1 accelerator runtime requirement; the container's jax, jaxlib and libtpu match its hardware:
	//   requirements.txt:4: jax[tpu]>=0.4
	// kinetic: to install one anyway, end its line with "# kn:keep"
	// --extra-index-url https://my-org.example.com/simple
	// keras>=3
	// numpy==1.26.4 ; python_version >= "3.10"
	// 64
}

func ExampleParseRequirements_refused() {
	_, err := deps.ParseRequirements("requirements.txt", []byte("-e ./mylib\n"))
	fmt.Println(err)
	// Output:
	// requirements.txt:1: "-e ./mylib" is an editable install, which cannot be installed where the job runs: ship the code in your working directory instead (it is packaged automatically and put on sys.path), or publish the package to an index and pin a version (name==1.2.3)
}
