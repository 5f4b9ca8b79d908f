package importrules

// m is the prefix of this module's packages.
const m = Module + "/"

// Rules are the module's import rules. Add a rule when a package's place in the layers
// (docs/architecture.md) says what it must not link; TestImportRules checks every one.
var Rules = []Rule{
	{
		Pkg:    m + "job",
		Why:    "the durable model is a leaf: the runner, the engine and the SDK's server all read it",
		Forbid: NotStandard(),
	},
	{
		Pkg:    m + "errs",
		Why:    "error codes are a leaf every package may import",
		Forbid: NotStandard(),
	},
	{
		Pkg: m + "engine",
		Why: "package batch owns batches and imports the engine (batch.Engine, which the engine implements): the engine imports nothing of batch, so nothing batch imports imports it back",
		Forbid: Under(
			m + "batch",
		),
	},
	{
		Pkg:    m + "batch/driver",
		Why:    "the batch driver interface is what backends implement and package batch asks: it sits below both and links the job model only, so a backend links neither batch nor the engine by implementing it",
		Forbid: Outside(m + "job"),
	},
	{
		Pkg:    m + "backend/local",
		Why:    "a backend runs batches through batch/driver and the store layout (batch/layout); package batch and the engine sit above the backends and import them",
		Forbid: Packages(m + "batch").Or(Under(m + "engine")),
	},
	{
		Pkg:    m + "backend/kubernetes",
		Why:    "a backend runs batches through batch/driver and the store layout (batch/layout); package batch and the engine sit above the backends and import them",
		Forbid: Packages(m + "batch").Or(Under(m + "engine")),
	},
	{
		Pkg:    m + "batch/layout",
		Why:    "the store layout of a batch is what the runner in a pod and the backends read: it links no backend, no engine, no driver and not package batch (the orchestration)",
		Forbid: Packages(m+"batch", m+"batch/driver").Or(Under(m+"engine", m+"backend")),
	},
	{
		Pkg:    m + "config",
		Why:    "backends declare their settings and names to config (config.Declare, config/backendnames), so config links no backend and no store",
		Forbid: Under(m+"backend", m+"store"),
	},
	{
		Pkg:    m + "config/backendnames",
		Why:    "the list of backend names is a leaf the backend interface and config share",
		Forbid: NotStandard(),
	},
	{
		Pkg:    m + "cmd/kinetic",
		Why:    "test harnesses (testkit: the GKE fakes, the test cluster, the emulators) import what they test; no program links them",
		Forbid: Under(m + "testkit"),
	},
	{
		Pkg:    m + "protocol",
		Why:    "the wire format is a leaf, so a client links nothing of the engine",
		Forbid: NotStandard(),
	},
	{
		Pkg: m + "engine",
		Why: "the engine reaches backends through the backend registry; the CLI chooses which it links",
		Forbid: Under(
			m+"backend/local",
			m+"backend/kubernetes",
			"k8s.io/client-go",
		),
	},
	{
		Pkg: m + "cmd/kinetic-runner",
		Why: "the pod's binary links the store drivers and the runner only",
		Forbid: Under(
			"github.com/spf13/cobra",
			m+"cli",
			m+"server",
			m+"engine",
			m+"backend",
		).Or(Packages(
			m + "batch", // batch/layout is the layout a pod reads; batch is the scheduler
		)).Or(Under(
			m+"infra",
			m+"dashboard",
			m+"image", // the image builder and publisher
			"github.com/google/go-containerregistry",
			"k8s.io/client-go",
		)),
	},
	{
		Pkg:    m + "store",
		Why:    "the store links the file:// and mem:// drivers only; gs:// and s3:// are store/gcs and store/s3, which the binaries import",
		Forbid: cloudDrivers,
	},
	{
		Pkg:    m + "backend",
		Why:    "the interface package links no store driver and no cloud SDK",
		Forbid: cloudDrivers,
	},
}

// cloudDrivers are the store drivers that link a cloud's SDK, and the SDKs.
var cloudDrivers = Under(
	m+"store/gcs",
	m+"store/s3",
	"gocloud.dev/blob/gcsblob",
	"gocloud.dev/blob/s3blob",
	"gocloud.dev/blob/azureblob",
	"cloud.google.com/go",
	"google.golang.org/api/storage",
	"github.com/aws",
)
