package imagetest

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Wheel writes a pure-Python wheel (py3-none-any) for project name at version into dir
// and returns its path. files maps paths inside the wheel (e.g. "mypkg/__init__.py") to
// their contents; METADATA, WHEEL and RECORD are added. Data files are stored
// uncompressed, so a wheel can be made as large as a test needs.
func Wheel(dir, name, version string, files map[string][]byte) (string, error) {
	return WheelWithMetadata(dir, name, version, "", files)
}

// WheelWithMetadata is Wheel with extra METADATA header lines (e.g.
// "Requires-Dist: other>=1.0\n").
func WheelWithMetadata(dir, name, version, metadata string, files map[string][]byte) (string, error) {
	dist := strings.ReplaceAll(name, "-", "_")
	info := fmt.Sprintf("%s-%s.dist-info", dist, version)
	all := map[string][]byte{}
	for k, v := range files {
		all[k] = v
	}
	all[info+"/METADATA"] = []byte(fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s", name, version, metadata))
	all[info+"/WHEEL"] = []byte("Wheel-Version: 1.0\nGenerator: kinetic-imagetest\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
	names := make([]string, 0, len(all)+1)
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	var record strings.Builder
	for _, n := range names {
		sum := sha256.Sum256(all[n])
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[n]))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", info)
	all[info+"/RECORD"] = []byte(record.String())
	names = append(names, info+"/RECORD")

	path := filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", dist, version))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	zw := zip.NewWriter(f)
	for _, n := range names {
		method := zip.Deflate
		if !strings.HasSuffix(n, ".py") && !strings.Contains(n, ".dist-info/") {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: method})
		if err != nil {
			f.Close()
			return "", err
		}
		if _, err := w.Write(all[n]); err != nil {
			f.Close()
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}
