package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ChecksumsFile is the checksum list in dist/.
const ChecksumsFile = "SHA256SUMS"

// WriteChecksums writes the SHA-256 of every file under dir (but the list itself) into
// out, one "<hex>  <path>" line each, paths relative to dir with forward slashes, sorted:
// `sha256sum -c` reads it. It returns the number of files.
func WriteChecksums(dir, out string) (int, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ChecksumsFile {
			return nil
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+rel)
		return nil
	})
	if err != nil {
		return 0, err
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return 0, err
	}
	return len(lines), nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
