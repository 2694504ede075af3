package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Body returns a request's or an answer's body as client-go logs it (the
// text, or a hex dump when it holds control characters; maybe cut short)
// with the secrets the package documentation lists hidden: in a JSON
// body the data of Secrets, in any text what String hides; a hex dump is
// left out.
func Body(body string) string {
	text, note := body, ""
	if loc := patterns().truncation.FindStringIndex(body); loc != nil {
		text, note = body[:loc[0]], body[loc[0]:]
	}
	switch trimmed := strings.TrimSpace(text); {
	case strings.HasPrefix(trimmed, "00000000  "):
		return fmt.Sprintf("[%d characters of hex dump left out: a binary body may hold secrets]", len(text)) + note
	case strings.HasPrefix(trimmed, "{"), strings.HasPrefix(trimmed, "["):
		return jsonBody(text) + note
	}
	return String(text) + note
}

// frame is an object or array being read.
type frame struct {
	object  bool
	n       int    // values written so far
	wantKey bool   // objects: the next string is a key
	key     string // objects: the key of the value being read
	// kind is the object's "kind" once read, inherited the kind it has as
	// an item of a list (an array: that of its items).
	kind, inherited string
	// hide: every string below is secret.
	hide bool
}

// effectiveKind is what the object says it is, or what its list says.
func (f *frame) effectiveKind() string {
	if f.kind != "" {
		return f.kind
	}
	return f.inherited
}

// holdsSecretData reports whether the value of key in object f is secret:
// the data of a Secret, or of an object that does not say what it is.
func (f *frame) holdsSecretData() bool {
	if !f.object || (f.key != "data" && f.key != "stringData") {
		return false
	}
	k := f.effectiveKind()
	return k == "" || k == "Secret"
}

// jsonBody re-writes the JSON text (compacted) with the data of Secrets
// hidden and String applied to every other string. Text that stops short
// ends with what could be read; text that is no valid JSON from some
// point on ends there, with a note.
func jsonBody(text string) string {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var out bytes.Buffer
	var stack []*frame
	top := func() *frame {
		if len(stack) == 0 {
			return nil
		}
		return stack[len(stack)-1]
	}
	// startValue writes what comes before a value in its parent.
	startValue := func() {
		p := top()
		switch {
		case p == nil:
			if out.Len() > 0 {
				out.WriteByte(' ')
			}
		case !p.object && p.n > 0:
			out.WriteByte(',')
		}
	}
	// endValue records a value as written in its parent.
	endValue := func() {
		if p := top(); p != nil {
			p.n++
			p.wantKey = p.object
		}
	}
	writeString := func(s string) {
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s) // a string always encodes
		out.Truncate(out.Len() - 1)
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out.String()
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return out.String()
			}
			return out.String() + " [the rest is no valid JSON and is left out]"
		}
		p := top()
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				startValue()
				f := &frame{object: v == '{', wantKey: v == '{'}
				if p != nil {
					f.hide = p.hide || p.holdsSecretData()
					switch {
					case !f.object && p.object && p.key == "items":
						if k := p.effectiveKind(); strings.HasSuffix(k, "List") {
							f.inherited = strings.TrimSuffix(k, "List")
						}
					case f.object && !p.object:
						f.inherited = p.inherited
					}
				}
				out.WriteRune(rune(v))
				stack = append(stack, f)
			default:
				out.WriteRune(rune(v))
				stack = stack[:len(stack)-1]
				endValue()
			}
		case string:
			if p != nil && p.object && p.wantKey {
				if p.n > 0 {
					out.WriteByte(',')
				}
				writeString(v)
				out.WriteByte(':')
				p.key, p.wantKey = v, false
				continue
			}
			startValue()
			switch {
			case p != nil && (p.hide || p.holdsSecretData()):
				writeString(Redacted)
			default:
				if p != nil && p.object && p.key == "kind" {
					p.kind = v
				}
				writeString(String(v))
			}
			endValue()
		default:
			startValue()
			b, _ := json.Marshal(v) // numbers, booleans and null always encode
			out.Write(b)
			endValue()
		}
	}
}
