package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/job"
)

var funcs = template.FuncMap{
	"age":        age,
	"dur":        fmtDur,
	"stateClass": func(s any) string { return stateClass(job.State(fmt.Sprint(s))) },
	"unix":       func(t time.Time) int64 { return t.UnixMilli() },
	"short":      short,
	"f1":         func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"add":        func(a, b int) int { return a + b },
	"sub":        func(a, b int) int { return a - b },
	"fadd":       func(a, b float64) float64 { return a + b },
	"textX":      textX,
	"anchor": func(x, w float64) string {
		if x+w > 700 && w < 300 {
			return "end"
		}
		return "start"
	},
	"inside": func(x, w float64) bool { return x+w > 700 && w >= 300 },
	"mul":    func(a, b int) int { return a * b },
	"sub64":  func(a, b int64) int64 { return a - b },
	"secs":   func(a, b time.Time) float64 { return b.Sub(a).Seconds() },
	"clock":  func(t time.Time) string { return t.Local().Format("15:04:05") },
	"image":  shortImage,
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
	"lower":     strings.ToLower,
	"firstLine": func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l },
	"statuses":  func() []string { return []string{"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "NOT_FOUND", "ERROR"} },
}

// stateClass is the CSS class of a state's colour.
func stateClass(s job.State) string {
	switch s {
	case job.Succeeded:
		return "ok"
	case job.Failed, "SUBMIT_FAILED":
		return "bad"
	case job.Running:
		return "run"
	case job.Pending:
		return "wait"
	case "ERROR":
		return "err"
	}
	return "gone"
}

// age is how long ago t was, in a few characters.
func age(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmtDur(time.Since(t).Seconds()) + " ago"
}

// fmtDur writes seconds as 850ms, 4.2s, 3m05s, 2h10m, 3d4h.
func fmtDur(s float64) string {
	switch {
	case s <= 0:
		return "0s"
	case s < 1:
		return fmt.Sprintf("%dms", int(math.Round(s*1000)))
	case s < 10:
		return fmt.Sprintf("%.1fs", s)
	case s < 60:
		return fmt.Sprintf("%ds", int(s))
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", int(s)/3600, int(s)%3600/60)
	}
	return fmt.Sprintf("%dd%dh", int(s)/86400, int(s)%86400/3600)
}

// short is the distinctive end of an ID (job-0123456789abcdefghijklm → …fghijklm).
func short(id string) string {
	if len(id) > 12 {
		return "…" + id[len(id)-8:]
	}
	return id
}

// textX places a bar's label just after it, or inside it (a long bar that reaches the
// right), or before it (a short bar at the right).
func textX(x, w float64) float64 {
	switch {
	case x+w <= 700:
		return x + w + 6
	case w >= 300:
		return x + 8
	}
	return math.Max(x-6, 0)
}

// shortImage is an image reference in a table cell: its last path element, a digest cut
// to 12 hex digits (the whole reference goes in the cell's title).
func shortImage(ref string) string {
	name, digest, hasDigest := strings.Cut(ref, "@")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if hasDigest {
		if algo, hex, ok := strings.Cut(digest, ":"); ok && len(hex) > 12 {
			digest = algo + ":" + hex[:12]
		}
		return name + "@" + digest
	}
	return name
}
