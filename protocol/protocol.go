// Package protocol is the wire format of the engine protocol: the JSON lines that the
// Python SDK (python/kinetic/_engine.py) exchanges with `kinetic serve --stdio`. Every
// method has a request type (its params) and a response type (its result); events and
// error classes are here too. The types are the contract: the server maps them to and
// from engine types, so the engine can change its own structs without changing the wire.
//
// The conversation is documented in docs/protocol.md and pinned by the golden
// transcripts in server/testdata, which the Go tests and the Python SDK's tests replay.
//
// Compatibility: adding a method, a param or a result field is compatible (both sides
// ignore unknown fields); removing or changing the meaning of anything increments
// Version.
package protocol

import "encoding/json"

// Version is the protocol's major version, sent in the greeting. A client that reads a
// different value must refuse to talk (and say which binary it found).
//
// 2: result and results_many no longer clean up (their cleanup param is gone); a
// client acknowledges the values it received with collected, which cleans up.
const Version = 2

// Request is one line from the client. Params is the method's request type, encoded.
type Request struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Message is one line to the client: the greeting (Kinetic and Protocol), an event (ID,
// Event and Data) or the response to a request (ID and Result or Error).
type Message struct {
	ID     int64  `json:"id,omitempty"`
	Result any    `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
	Event  string `json:"event,omitempty"`
	Data   any    `json:"data,omitempty"`
	// Line is set on the error answering a line that is not a request: its number among
	// the lines the client sent (the first is 1), so that the client finds the call it
	// answers when no ID could be read from it.
	Line int64 `json:"line,omitempty"`
	// Greeting fields.
	Kinetic  string `json:"kinetic,omitempty"`
	Protocol int    `json:"protocol,omitempty"`
}

// Greeting is the first message of a conversation.
func Greeting(kinetic string) Message { return Message{Kinetic: kinetic, Protocol: Version} }

// Error is a failed request.
type Error struct {
	Class   Class  `json:"type"`
	Message string `json:"message"`
	// Collected is set on a NotFound error for a job whose result another caller
	// collected (and which was then cleaned up): who, and when. Python:
	// kinetic.ResultCollectedError.
	Collected *TakenByOther `json:"collected,omitempty"`
}

// Class says what kind of failure an Error is; clients map classes to exceptions.
type Class string

// The error classes. A client treats a class it does not know as Internal. The server
// chooses a class from the error's errs.Code (server/errors.go); codes without a class
// of their own take the closest one, so adding a class is a compatible change only in
// that old clients see it as Internal.
const (
	// InvalidArgument: the request cannot be served as given (bad params, an unknown
	// method, an invalid accelerator, configuration value, dependency file, Data
	// reference or image reference), or not in the present state (a debugger of a job
	// that is not a debug job, a corrupt profiles file). Python: kinetic.KineticError.
	InvalidArgument Class = "InvalidArgument"
	// NotFound: the job or batch named does not exist. Python: kinetic.JobNotFoundError.
	NotFound Class = "NotFound"
	// Timeout: the request's timeout passed first. Python: TimeoutError.
	Timeout Class = "Timeout"
	// NoResult: the job ended without a result (killed, cancelled, lost). Python:
	// RuntimeError.
	NoResult Class = "NoResult"
	// Cancelled: the request was cancelled (cancel_request). Python: KeyboardInterrupt.
	Cancelled Class = "Cancelled"
	// PermissionDenied: the store, registry or cluster refused this machine's
	// credentials (a bucket's IAM, a read-only file system). Python:
	// kinetic.PermissionDeniedError, a PermissionError.
	PermissionDenied Class = "PermissionDenied"
	// ResourceExhausted: a disk, quota or limit is full (a full store, a quota of the
	// cloud). Python: kinetic.ResourceExhaustedError.
	ResourceExhausted Class = "ResourceExhausted"
	// Unavailable: a service did not answer (a store or registry down or unreachable);
	// trying again later may work. Python: kinetic.UnavailableError, a ConnectionError.
	Unavailable Class = "Unavailable"
	// Internal: anything else (a bug, an error without a code). Python:
	// kinetic.KineticError.
	Internal Class = "Internal"
)

// Classes lists every error class.
var Classes = []Class{InvalidArgument, NotFound, Timeout, NoResult, Cancelled, PermissionDenied, ResourceExhausted, Unavailable, Internal}

// Event names. An event carries the ID of the request it belongs to and arrives before
// that request's response.
const (
	// EventLog carries a chunk of the job's output (a string), for wait, result and logs.
	EventLog = "log"
	// EventStatus carries the job's new state (a string, see the State constants), for
	// wait and result with status_events.
	EventStatus = "status"
	// EventChild carries a ChildStatus, once per input of a batch, for batch_watch.
	EventChild = "child"
	// EventSubmitted carries the Handle of the job a call submitted, before its wait.
	EventSubmitted = "submitted"
	// EventChildren carries Children, the ChildStatus of every input one round of a
	// batch_watch with batched found ended (in completion order, as EventChild's).
	EventChildren = "children"
	// EventRecorded carries a MapResponse for map, once the batch's manifest is in the
	// store, and again with running true once its inputs run without the engine (a
	// unit started): if the engine dies before its reply, the client still knows the
	// batch and whether it runs on.
	EventRecorded = "recorded"
)

// Job states, as in status replies and status events.
const (
	StatePending   = "PENDING"
	StateRunning   = "RUNNING"
	StateSucceeded = "SUCCEEDED"
	StateFailed    = "FAILED"
	StateNotFound  = "NOT_FOUND"
)
