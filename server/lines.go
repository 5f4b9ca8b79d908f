package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/protocol"
)

// Lines the server cannot read. Every line gets an answer: one that does not decode as
// a request is answered with an InvalidArgument error carrying the id found in it (a
// tolerant scan: NaN, Infinity or a cut-short line elsewhere do not hide it) and the
// line's number, so that the client can fail the one call that sent it instead of
// waiting for a reply that will never come.

// unreadable is the answer to line number n, which did not decode as a request.
func unreadable(n int64, line []byte, err error) protocol.Message {
	m := protocol.Message{Line: n, Error: &protocol.Error{Class: protocol.InvalidArgument}}
	if id, ok := requestID(line); ok {
		m.ID = id
		m.Error.Message = fmt.Sprintf("the engine could not read request %d: %s", id, lineProblem(line, err))
	} else {
		m.Error.Message = fmt.Sprintf("the engine could not read line %d of its input: %s", n, lineProblem(line, err))
	}
	return m
}

// lineProblem says in plain words what is wrong with a line that did not decode.
func lineProblem(line []byte, err error) string {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		switch {
		case hasNonFinite(line):
			return "a number in it is NaN or Infinity, which JSON cannot carry (a timeout of float('nan') or float('inf')?)"
		case syntax.Offset >= int64(len(bytes.TrimRight(line, " \t\r"))):
			return "it ends before its JSON does (a cut-short line?)"
		}
		return fmt.Sprintf("it is not valid JSON (at character %d)", syntax.Offset)
	}
	return jsonProblem(nil, err)
}

// jsonProblem says in plain words why JSON that is well formed (raw, when known) did not
// decode into the type expected (Go's own words name Go types). A wrong value inside an
// object of names (the config or the tags) is named by its key: "config.zone".
func jsonProblem(raw []byte, err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		field := jsonPath(typ.Field)
		if key := mapKey(raw, field, typ.Value); key != "" {
			field += "." + key
		}
		if field == "" {
			return fmt.Sprintf("it is a JSON %s, not %s", typ.Value, jsonKind(typ.Type))
		}
		return fmt.Sprintf("%q is a JSON %s, not %s", field, typ.Value, jsonKind(typ.Type))
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Sprintf("it is not valid JSON (at character %d)", syntax.Offset)
	}
	return "it is not a JSON object"
}

// jsonPath is the path of a field as the client wrote it: Go's path also names the
// embedded structs it went through (WaitRequest.JobRequest.timeout), whose names start
// with a capital letter, as no member name of the protocol does.
func jsonPath(goPath string) string {
	var kept []string
	for _, p := range strings.Split(goPath, ".") {
		if p != "" && (p[0] < 'A' || p[0] > 'Z') {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// mapKey is the key of the first member whose JSON kind is kind (Go's words: "number",
// "array", ...) in the object at the dotted path of raw, if that is an object ("" if
// not): Go names the map a wrong value was in, not its key.
func mapKey(raw []byte, path, kind string) string {
	var v any
	if len(raw) == 0 || path == "" || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(kind, jsonKindOf(m[k])) {
			return k
		}
	}
	return ""
}

// jsonKindOf is Go's word for the JSON kind of a decoded value.
func jsonKindOf(v any) string {
	switch v.(type) {
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// jsonKind names what JSON value a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "the value expected"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "the value expected"
}

// requestID finds the "id" member of the top-level object of a line, whatever is wrong
// elsewhere in it. ok is false when there is none, or when it is not a whole number
// followed by the end of the member (a line cut short inside it: the id is not known).
func requestID(line []byte) (id int64, ok bool) {
	depth := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(line, i)
			if end < 0 {
				return 0, false
			}
			// At depth 1 a string followed by ':' is a member name of the request.
			if depth == 1 && string(line[i+1:end]) == "id" {
				if id, ok := memberInt(line[end+1:]); ok {
					return id, true
				}
			}
			i = end
		}
	}
	return 0, false
}

// stringEnd is the index of the quote that ends the string starting at line[start]
// (-1: it does not end).
func stringEnd(line []byte, start int) int {
	for i := start + 1; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// memberInt reads `: N` followed by ',', '}' or a space: a member's whole-number value.
func memberInt(rest []byte) (int64, bool) {
	rest = bytes.TrimLeft(rest, " \t\r")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r")
	n := 0
	if n < len(rest) && rest[n] == '-' {
		n++
	}
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == len(rest) || !bytes.ContainsRune([]byte(",} \t\r"), rune(rest[n])) {
		return 0, false
	}
	id, err := strconv.ParseInt(string(rest[:n]), 10, 64)
	return id, err == nil
}

// hasNonFinite reports whether line holds NaN, Infinity or -Infinity outside strings:
// what Python's json writes for float('nan') and float('inf').
func hasNonFinite(line []byte) bool {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"':
			end := stringEnd(line, i)
			if end < 0 {
				return false
			}
			i = end
		case 'N':
			if bytes.HasPrefix(line[i:], []byte("NaN")) {
				return true
			}
		case 'I':
			if bytes.HasPrefix(line[i:], []byte("Infinity")) {
				return true
			}
		}
	}
	return false
}
