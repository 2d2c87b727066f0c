// Package otlptest is the receiving side of OTLP/HTTP for tests: it
// decodes what an exporter sent with the official OTLP types, so a test
// checks wiggum's hand-written wire format against them. Only tests
// import it (the binary carries no protobuf runtime).
package otlptest

import (
	"compress/gzip"
	"io"
	"net/http"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// ReadHTTP decodes the body of an OTLP/HTTP protobuf trace export, gzip
// or plain as its Content-Encoding says.
func ReadHTTP(r *http.Request) (*coltracepb.ExportTraceServiceRequest, error) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var m coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// WriteHTTP answers an export as accepted, with partial when it is not nil.
func WriteHTTP(w http.ResponseWriter, partial *coltracepb.ExportTracePartialSuccess) {
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: partial})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}
