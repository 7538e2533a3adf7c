// Command ext-authz-client sends Envoy external authorization CheckRequests, built with Envoy's
// own Go API types, to a gRPC Authorization service, and prints what came back as JSON. The
// tests of src/protocols/ext-authz drive it: a client nobody on the project wrote the types of.
//
// Usage: ext-authz-client -addr HOST:PORT [-broker TOKEN] < cases.json
// cases.json is a JSON array of {method, path, headers, body, mcp}; mcp, when present, is put in
// the request's metadata_context under envoy.filters.http.mcp, as Envoy's MCP filter does.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

type checkCase struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	MCP     map[string]any    `json:"mcp"`
}

type checkResult struct {
	RPCError        string            `json:"rpcError,omitempty"`
	RPCCode         string            `json:"rpcCode,omitempty"`
	Code            int32             `json:"code"`
	Allowed         bool              `json:"allowed"`
	HTTPStatus      int32             `json:"httpStatus,omitempty"`
	Headers         map[string]string `json:"headers"`
	HeadersToRemove []string          `json:"headersToRemove,omitempty"`
	Body            string            `json:"body,omitempty"`
}

func main() {
	addr := flag.String("addr", "", "host:port of the Authorization service")
	broker := flag.String("broker", "", "the broker token, sent as gRPC metadata authorization: Bearer …")
	flag.Parse()

	var cases []checkCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fail("reading cases: %v", err)
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail("dialing: %v", err)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)

	results := make([]checkResult, 0, len(cases))
	for _, c := range cases {
		results = append(results, check(client, *broker, c))
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fail("writing results: %v", err)
	}
}

func check(client authv3.AuthorizationClient, broker string, c checkCase) checkResult {
	request := &authv3.CheckRequest{
		Attributes: &authv3.AttributeContext{
			Request: &authv3.AttributeContext_Request{
				Http: &authv3.AttributeContext_HttpRequest{
					Method:  c.Method,
					Path:    c.Path,
					Headers: c.Headers,
					Body:    c.Body,
					Size:    int64(len(c.Body)),
				},
			},
		},
	}
	if c.MCP != nil {
		fields, err := structpb.NewStruct(c.MCP)
		if err != nil {
			fail("mcp metadata: %v", err)
		}
		request.Attributes.MetadataContext = &corev3.Metadata{
			FilterMetadata: map[string]*structpb.Struct{"envoy.filters.http.mcp": fields},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if broker != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+broker)
	}
	response, err := client.Check(ctx, request)
	if err != nil {
		st := status.Convert(err)
		return checkResult{RPCError: st.Message(), RPCCode: st.Code().String(), Code: int32(st.Code())}
	}
	result := checkResult{Code: response.GetStatus().GetCode(), Headers: map[string]string{}}
	if ok := response.GetOkResponse(); ok != nil && result.Code == 0 {
		result.Allowed = true
		for _, h := range ok.GetHeaders() {
			result.Headers[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
		}
		result.HeadersToRemove = ok.GetHeadersToRemove()
	}
	if denied := response.GetDeniedResponse(); denied != nil {
		result.HTTPStatus = int32(denied.GetStatus().GetCode())
		for _, h := range denied.GetHeaders() {
			result.Headers[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
		}
		result.Body = denied.GetBody()
	}
	return result
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ext-authz-client: "+format+"\n", args...)
	os.Exit(2)
}
