// Package mcp connects frontdesk to the Model Context Protocol. This file
// is the server side: the conversation's history tools, served to other
// agents and desktop MCP clients over streamable HTTP (/mcp) or stdio
// (frontdesk mcp), through the official Go SDK.
package mcp

import (
	"context"
	"encoding/json"

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
