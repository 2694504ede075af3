package componentbase

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LoggingConfiguration is the "logging" block of a component's file.
type LoggingConfiguration struct {
	Format         string               `json:"format,omitempty"`
	FlushFrequency TimeOrMetaDuration   `json:"flushFrequency"`
	Verbosity      VerbosityLevel       `json:"verbosity"`
	VModule        VModuleConfiguration `json:"vmodule,omitempty"`
	Options        FormatOptions        `json:"options,omitempty"`
}

// VerbosityLevel is a klog verbosity.
type VerbosityLevel uint32

// VModuleConfiguration sets verbosities per file pattern.
type VModuleConfiguration []VModuleItem

// VModuleItem is one file pattern and its verbosity.
type VModuleItem struct {
	FilePattern string         `json:"filePattern"`
	Verbosity   VerbosityLevel `json:"verbosity"`
}

// FormatOptions holds the options of each log format.
type FormatOptions struct {
	Text TextOptions `json:"text,omitempty"`
	JSON JSONOptions `json:"json,omitempty"`
}

// TextOptions are the options of the text format.
type TextOptions struct {
	OutputRoutingOptions `json:",inline"`
}

// JSONOptions are the options of the JSON format.
type JSONOptions struct {
	OutputRoutingOptions `json:",inline"`
}

// OutputRoutingOptions choose where info messages go and how they are
// buffered.
type OutputRoutingOptions struct {
	SplitStream    bool                   `json:"splitStream,omitempty"`
	InfoBufferSize resource.QuantityValue `json:"infoBufferSize,omitempty"`
}

// TimeOrMetaDuration is a duration a file may give as a string ("5s") or
// as a number of nanoseconds; it is written back in the form it was read
// in, a number when it was not read at all.
type TimeOrMetaDuration struct {
	Duration metav1.Duration
	// SerializeAsString is true when the value was read as a string.
	SerializeAsString bool `json:"-"`
}

// MarshalJSON writes a string or a number of nanoseconds, see
// TimeOrMetaDuration.
func (d TimeOrMetaDuration) MarshalJSON() ([]byte, error) {
	if d.SerializeAsString {
		return d.Duration.MarshalJSON()
	}
	return []byte(strconv.FormatInt(int64(d.Duration.Duration), 10)), nil
}

// UnmarshalJSON reads a duration string or a number of nanoseconds.
func (d *TimeOrMetaDuration) UnmarshalJSON(data []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte(`"`)) {
		d.SerializeAsString = true
		return d.Duration.UnmarshalJSON(data)
	}
	d.SerializeAsString = false
	var n int64
	if err := json.Unmarshal(data, &n); err != nil {
		return fmt.Errorf("a duration is a string such as \"5s\" or a number of nanoseconds: %w", err)
	}
	d.Duration.Duration = time.Duration(n)
	return nil
}

// TracingConfiguration is the "tracing" block of a component's file.
type TracingConfiguration struct {
	Endpoint               *string `json:"endpoint,omitempty"`
	SamplingRatePerMillion *int32  `json:"samplingRatePerMillion,omitempty"`
}

// ClientConnectionConfiguration is how a component talks to the API server.
type ClientConnectionConfiguration struct {
	Kubeconfig         string  `json:"kubeconfig"`
	AcceptContentTypes string  `json:"acceptContentTypes"`
	ContentType        string  `json:"contentType"`
	QPS                float32 `json:"qps"`
	Burst              int32   `json:"burst"`
}
