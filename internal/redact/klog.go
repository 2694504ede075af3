package redact

import (
	"fmt"

	"k8s.io/klog/v2"
)

// Filter is a klog.LogFilter that hides secrets (see the package
// documentation) in every message and value. A value that holds none is
// passed on as it is, so its formatting does not change.
type Filter struct{}

var _ klog.LogFilter = Filter{}

// Filter hides secrets in the arguments of klog's Info, Warning, Error
// (and their ln and Depth forms).
func (Filter) Filter(args []any) []any {
	out := args
	copied := false
	for i, a := range args {
		if r, changed := value(a, "%v", String); changed {
			if !copied {
				out, copied = append([]any(nil), args...), true
			}
			out[i] = r
		}
	}
	return out
}

// FilterF hides secrets in a message of klog's Infof, Warningf, Errorf
// (and their Depth forms): the message is formatted first, so no secret
// can be split between the format and its arguments.
func (Filter) FilterF(format string, args []any) (string, []any) {
	msg := fmt.Sprintf(format, args...)
	if r := String(msg); r != msg {
		return "%s", []any{r}
	}
	return format, args
}

// FilterS hides secrets in the message and the values of a structured
// call (InfoS, ErrorS, and the calls of client-go's loggers). Strings are
// read as bodies (see Body): client-go logs its requests' and answers'
// bodies as a "body" value.
func (Filter) FilterS(msg string, kvs []any) (string, []any) {
	out := kvs
	copied := false
	for i := 1; i < len(kvs); i += 2 {
		if r, changed := value(kvs[i], "%+v", Body); changed {
			if !copied {
				out, copied = append([]any(nil), kvs...), true
			}
			out[i] = r
		}
	}
	return String(msg), out
}

// value returns v, as text with its secrets hidden by hide when it holds
// any (formatted with verb, as klog would), and whether it did.
func value(v any, verb string, hide func(string) string) (any, bool) {
	var text string
	switch t := v.(type) {
	case nil:
		return v, false
	case string:
		text = t
	case []byte:
		text = string(t)
	case error:
		text = t.Error()
	default:
		text = fmt.Sprintf(verb, v)
	}
	if r := hide(text); r != text {
		return r, true
	}
	return v, false
}

// InstallKlogFilter makes every klog call of the process pass through
// Filter, and turns off klog's contextual logging so that a logger a
// library keeps in a context cannot go around it: klog.FromContext then
// always returns klog's own logger, which writes through the filter. It
// changes klog's global settings, once for the process, before anything
// logs.
func InstallKlogFilter() {
	klog.SetLogFilter(Filter{})
	klog.EnableContextualLogging(false)
}
