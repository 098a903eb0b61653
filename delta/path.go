package delta

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// EscapePath URL-encodes a slash-separated path relative to the table folder for the path
// field of an add, remove or cdc action: each segment is percent-encoded as an RFC 3986 path
// segment, so "a b/c.parquet" becomes "a%20b/c.parquet" (Delta PROTOCOL.md, "Add File and Remove
// File": the path is a URI that readers decode).
func EscapePath(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// localPath turns the path of an action into a file name: relative paths are URL-decoded and
// joined to dir; absolute URIs "file:///x" and absolute paths are taken as they are.
func localPath(dir, p string) (string, error) {
	if strings.HasPrefix(p, "file:") {
		u, err := url.Parse(p)
		if err != nil {
			return "", fmt.Errorf("path %q is not a valid URI: %w", p, err)
		}
		return filepath.FromSlash(u.Path), nil
	}
	if i := strings.Index(p, "://"); i > 0 && !strings.ContainsAny(p[:i], "/%") {
		return "", fmt.Errorf("path %q is on a remote file system, which is not supported", p)
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		return "", fmt.Errorf("path %q is not URL-encoded correctly: %w", p, err)
	}
	if filepath.IsAbs(dec) {
		return filepath.Clean(dec), nil
	}
	return filepath.Join(dir, filepath.FromSlash(dec)), nil
}

// localPathRel decodes the path of an action that is relative to the table folder into its
// slash-separated on-disk form; an absolute path or URI is an error.
func localPathRel(p string) (string, error) {
	if strings.HasPrefix(p, "/") || strings.Contains(p, ":") {
		return "", fmt.Errorf("path %q is not relative to the table", p)
	}
	return url.PathUnescape(p)
}
