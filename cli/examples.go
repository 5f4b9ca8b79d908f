package cli

import "github.com/spf13/cobra"

// examples are the Examples of every command without its own, by command path: every
// command's help shows how it is used (a test holds that each has one and that each
// line names a real command with flags it has).
var examples = map[string]string{
	"kinetic": `  kinetic run examples/hello.py::main        # a function on this machine
  kinetic jobs list                          # what ran, newest first
  kinetic up --backend k8s -y                # set up the current kubectl cluster`,
	"kinetic batch":                 `  kinetic batch list`,
	"kinetic batch cancel":          `  kinetic batch cancel grp-01k8612xmwtfd0n4dk0vb3m`,
	"kinetic batch cleanup":         `  kinetic batch cleanup grp-01k8612xmwtfd0n4dk0vb3m`,
	"kinetic batch list":            `  kinetic batch list --json`,
	"kinetic batch results":         `  kinetic batch results grp-01k8612xmwtfd0n4dk0vb3m --json`,
	"kinetic batch status":          `  kinetic batch status -f grp-01k8612xmwtfd0n4dk0vb3m`,
	"kinetic completion":            `  kinetic completion bash > /etc/bash_completion.d/kinetic`,
	"kinetic completion bash":       `  source <(kinetic completion bash)`,
	"kinetic completion fish":       `  kinetic completion fish > ~/.config/fish/completions/kinetic.fish`,
	"kinetic completion powershell": `  kinetic completion powershell | Out-String | Invoke-Expression`,
	"kinetic completion zsh":        `  kinetic completion zsh > "${fpath[1]}/_kinetic"`,
	"kinetic config":                `  kinetic config show`,
	"kinetic config show":           `  kinetic config show --json`,
	"kinetic dashboard": `  kinetic dashboard --open
  kinetic dashboard --port 8080`,
	"kinetic doctor": `  kinetic doctor
  kinetic doctor --json`,
	"kinetic down": `  kinetic down --preview
  kinetic down -y --force-destroy`,
	"kinetic init":         `  kinetic init`,
	"kinetic jobs":         `  kinetic jobs list`,
	"kinetic jobs cancel":  `  kinetic jobs cancel job-01k8612xmwtfd0n4dk0vb3m`,
	"kinetic jobs cleanup": `  kinetic jobs cleanup job-01k8612xmwtfd0n4dk0vb3m`,
	"kinetic jobs logs": `  kinetic jobs logs -f job-01k8612xmwtfd0n4dk0vb3m
  kinetic jobs logs -n 50 job-01k8612xmwtfd0n4dk0vb3m`,
	"kinetic jobs result": `  kinetic jobs result job-01k8612xmwtfd0n4dk0vb3m --json`,
	"kinetic jobs status": `  kinetic jobs status job-01k8612xmwtfd0n4dk0vb3m`,
	"kinetic pool":        `  kinetic pool list`,
	"kinetic pool list":   `  kinetic pool list --json`,
	"kinetic pool remove": `  kinetic pool remove gpu-l4 -y`,
	"kinetic profile":     `  kinetic profile ls`,
	"kinetic profile create": `  kinetic profile create team --backend k8s --namespace ml --store gs://team-bucket
  kinetic profile create laptop --backend local --use`,
	"kinetic profile ls":    `  kinetic profile ls`,
	"kinetic profile rm":    `  kinetic profile rm team`,
	"kinetic profile show":  `  kinetic profile show team`,
	"kinetic profile unset": `  kinetic profile unset`,
	"kinetic profile use":   `  kinetic profile use team`,
	"kinetic status":        `  kinetic status`,
	"kinetic store":         `  kinetic store create gs://team-bucket`,
	"kinetic up": `  kinetic up --backend k8s --preview
  kinetic up --backend k8s -y --namespace ml --registry registry.example.com/ml
  kinetic up --backend gke --project my-project --zone us-central2-b -y`,
}

// withExamples sets the Example of every command under root that has none.
func withExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" {
			c.Example = examples[c.CommandPath()]
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
