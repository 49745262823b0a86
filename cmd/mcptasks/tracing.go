package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcptasks/mcptasks/internal/redact"
)

// traceFlushTimeout bounds the export of the spans still buffered when the
// process exits.
const traceFlushTimeout = 5 * time.Second

// The standard OpenTelemetry variables that turn tracing on.
const (
	envOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// newTracerProvider returns the TracerProvider of serve, worker and proxy,
// or nil (tracing off) unless --otel-endpoint (endpoint) or one of the
// standard variables OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_ENDPOINT, read with getenv, names a collector. Spans
// are batched and sent with OTLP over HTTP, as service.name "mcptasks"
// unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise; the
// other OTEL_* variables of the exporter, the sampler and the batch
// processor apply. It also returns where the spans go, for the log:
// without the URL's user information and query, which may carry
// credentials.
func newTracerProvider(ctx context.Context, endpoint string, getenv func(string) string) (*sdktrace.TracerProvider, string, error) {
	var (
		opts []otlptracehttp.Option
		to   string
	)
	switch {
	case endpoint != "":
		// Like OTEL_EXPORTER_OTLP_ENDPOINT, the flag is the collector's
		// base URL: traces go to its path /v1/traces.
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, "", fmt.Errorf("--otel-endpoint %q: want the collector's http:// or https:// base URL, e.g. http://127.0.0.1:4318", endpoint)
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		to = u.String()
		opts = append(opts, otlptracehttp.WithEndpointURL(to))
	case getenv(envOTLPTracesEndpoint) != "":
		to = getenv(envOTLPTracesEndpoint)
	case getenv(envOTLPEndpoint) != "":
		to = getenv(envOTLPEndpoint)
	default:
		return nil, "", nil
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("tracing: %w", err)
	}
	// Later options win: the environment overrides the defaults.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "mcptasks"), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, "", fmt.Errorf("tracing: resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), redact.URL(to), nil
}
