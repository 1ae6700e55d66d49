// Package mcp connects frontdesk to the Model Context Protocol. This file
// is the server side: the conversation's history tools, served to other
// agents and desktop MCP clients over streamable HTTP (/mcp) or stdio
// (frontdesk mcp), through the official Go SDK.
package mcp

import (
	"context"
	"encoding/json"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/frontdesk-hq/frontdesk/agent"
)

// serveNames maps the agent's tool names to the names the MCP server
// offers: shorter, as MCP clients show them beside other servers' tools.
var serveNames = map[string]string{
	"history_get_recent": "history_recent",
	"history_get_range":  "history_range",
	"history_search":     "history_search",
}

// NewServer returns an MCP server that offers tools: the history tools
// (renamed history_recent, history_range, history_search; others keep
// their names), with the same descriptions, argument schemas and JSON
// answers the agent gets. A tool's error is a tool result with isError,
// which the calling model can read, not a protocol error.
func NewServer(version string, tools []agent.Tool) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "frontdesk", Title: "frontdesk conversation history", Version: version}, nil)
	for _, t := range tools {
		name := t.Name
		if n, ok := serveNames[name]; ok {
			name = n
		}
		call := t.Call
		s.AddTool(&sdk.Tool{Name: name, Description: t.Description, InputSchema: json.RawMessage(t.Parameters)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				out, err := call(ctx, req.Params.Arguments)
				if err != nil {
					return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}}, nil
			})
	}
	return s
}

// Handler serves s over the streamable HTTP transport. Authentication and
// the Origin and Host checks happen in front of it (package web), as for
// /api/*. It is stateless: every request stands alone, so a restart of
// frontdesk never strands a client's session.
func Handler(s *sdk.Server) http.Handler {
	// The SDK's own localhost check is off: package web already admits only
	// the configured Host names, which may include a reverse proxy's.
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true})
}
