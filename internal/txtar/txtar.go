// Package txtar reads and writes the txtar archives of the golden wire
// transcripts: a comment, then files introduced by "-- NAME --" lines, as
// golang.org/x/tools/txtar defines them. Names may repeat.
package txtar

import (
	"bytes"
	"fmt"
	"strings"
)

// Archive is a txtar archive.
type Archive struct {
	Comment []byte
	Files   []File
}

// File is one file of an archive.
type File struct {
	Name string
	Data []byte
}

// Parse parses data. Format of the result gives data back, byte for byte,
// when data ends with a newline.
func Parse(data []byte) *Archive {
	a := &Archive{}
	var cur *File
	for len(data) > 0 {
		line := data
		rest := []byte(nil)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, rest = data[:i+1], data[i+1:]
		}
		data = rest
		if name, ok := fileMarker(line); ok {
			a.Files = append(a.Files, File{Name: name})
			cur = &a.Files[len(a.Files)-1]
			continue
		}
		if cur == nil {
			a.Comment = append(a.Comment, line...)
		} else {
			cur.Data = append(cur.Data, line...)
		}
	}
	return a
}

func fileMarker(line []byte) (string, bool) {
	s := strings.TrimRight(string(line), "\r\n")
	if !strings.HasPrefix(s, "-- ") || !strings.HasSuffix(s, " --") || len(s) < len("-- x --") {
		return "", false
	}
	return strings.TrimSpace(s[3 : len(s)-3]), true
}

// Format returns a as text, each part ending with a newline.
func (a *Archive) Format() []byte {
	var b bytes.Buffer
	b.Write(fixNL(a.Comment))
	for _, f := range a.Files {
		fmt.Fprintf(&b, "-- %s --\n", f.Name)
		b.Write(fixNL(f.Data))
	}
	return b.Bytes()
}

func fixNL(b []byte) []byte {
	if len(b) == 0 || b[len(b)-1] == '\n' {
		return b
	}
	return append(b, '\n')
}
