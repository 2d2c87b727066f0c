package main

import (
	"os/exec"
	"strings"
	"testing"
)

// goListDeps is every package linked into pkg.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestNoGRPCOrProtobufRuntime: the wiggum binary links no gRPC, protobuf
// runtime, grpc-gateway, generated OTLP types or official OTLP exporters.
// Their package inits (descriptor registration, gRPC's balancers and
// resolvers) cost every process, each hook call included, ~1.7 ms at
// start; internal/otlp speaks OTLP without them. Tests may import them (a
// test's imports are not linked into the binary).
func TestNoGRPCOrProtobufRuntime(t *testing.T) {
	banned := []string{
		"google.golang.org/grpc",
		"google.golang.org/protobuf",
		"google.golang.org/genproto",
		"github.com/grpc-ecosystem/",
		"go.opentelemetry.io/proto/",
		"go.opentelemetry.io/otel/exporters/",
		"golang.org/x/net/",
	}
	for _, p := range goListDeps(t, ".") {
		for _, b := range banned {
			if strings.HasPrefix(p, b) {
				t.Errorf("cmd/wiggum links %s (a %s package)", p, b)
			}
		}
	}
}
