package testbed

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// serviceUnit is what the stand-in for systemd runs of a service unit of
// unitDir (the control plane of host processes writes these): its
// ExecStart split into words as systemd splits it, its Environment and
// its Restart and RestartSec settings. Other settings are ignored.
type serviceUnit struct {
	argv         []string
	env          []string
	restart      bool
	restartDelay time.Duration
}

// systemdDefaultRestartDelay is systemd's RestartSec when a unit sets none.
const systemdDefaultRestartDelay = 100 * time.Millisecond

// readServiceUnit reads unitDir/name (a ".service" unit). ok is false for
// a unit without a file or without ExecStart (a timer's, say).
func readServiceUnit(name string) (u serviceUnit, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(unitDir, name))
	if errors.Is(err, os.ErrNotExist) {
		return u, false, nil
	}
	if err != nil {
		return u, false, err
	}
	u, err = parseServiceUnit(name, string(data))
	return u, err == nil && len(u.argv) > 0, err
}

// parseServiceUnit reads the settings of serviceUnit from a unit file's
// text.
func parseServiceUnit(name, text string) (u serviceUnit, err error) {
	u.restartDelay = systemdDefaultRestartDelay
	section := ""
	for _, line := range unitLines(text) {
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		key, value, found := strings.Cut(line, "=")
		if !found || section != "Service" {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "ExecStart":
			words, err := unitWords(value, true)
			if err != nil {
				return u, fmt.Errorf("%s: ExecStart: %w", name, err)
			}
			// Prefixes such as "-" (ignore failure) change nothing here.
			if len(words) > 0 {
				words[0] = strings.TrimLeft(words[0], "-@:+!")
			}
			u.argv = words
		case "Environment":
			words, err := unitWords(value, false)
			if err != nil {
				return u, fmt.Errorf("%s: Environment: %w", name, err)
			}
			u.env = append(u.env, words...)
		case "Restart":
			u.restart = value != "no"
		case "RestartSec":
			d, err := time.ParseDuration(value)
			if err != nil {
				d, err = time.ParseDuration(value + "s")
			}
			if err != nil {
				return u, fmt.Errorf("%s: RestartSec=%s: %w", name, value, err)
			}
			u.restartDelay = d
		}
	}
	return u, nil
}

// unitLines are a unit file's settings and section headers, lines
// continued by a trailing backslash joined with a space, comments and
// blank lines dropped.
func unitLines(text string) []string {
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if cur.Len() == 0 {
			t := strings.TrimSpace(line)
			if t == "" || t[0] == '#' || t[0] == ';' {
				continue
			}
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(line)
		out = append(out, strings.TrimSpace(cur.String()))
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, strings.TrimSpace(cur.String()))
	}
	return out
}

// unitWords splits a setting into words as systemd does: white space
// separates words, double or single quotes group them, C escapes work in
// and out of quotes, "%%" is "%", and in a command line "$$" is "$".
// Variable references ($X) are not expanded (kubeadm writes none).
func unitWords(s string, command bool) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\' && i+1 < len(rs):
			i++
			switch rs[i] {
			case 'n':
				w.WriteByte('\n')
			case 't':
				w.WriteByte('\t')
			default:
				w.WriteRune(rs[i])
			}
			in = true
		case quote == 0 && (r == '"' || r == '\''):
			quote, in = r, true
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == ' ' || r == '\t'):
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case r == '%' && i+1 < len(rs) && rs[i+1] == '%':
			w.WriteByte('%')
			i++
			in = true
		case command && r == '$' && i+1 < len(rs) && rs[i+1] == '$':
			w.WriteByte('$')
			i++
			in = true
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}
