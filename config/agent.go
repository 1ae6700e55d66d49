package config

// Agent selects and configures the backend.
type Agent struct {
	// Backend is demo | openai | command. Default demo.
	Backend string  `yaml:"backend"`
	Demo    Demo    `yaml:"demo"`
	OpenAI  OpenAI  `yaml:"openai"`
	Command Command `yaml:"command"`
}

// Demo configures the offline demo agent.
type Demo struct {
	// DelayMS between streamed words. Default 30; 0 streams at once.
	DelayMS int `yaml:"delay_ms"`
}

// OpenAI configures the openai backend: any OpenAI-compatible chat
// completions endpoint (OpenAI, Ollama, llama.cpp server, vLLM).
type OpenAI struct {
	// BaseURL is the API root, usually ending in /v1, for example
	// http://127.0.0.1:11434/v1 for Ollama. Empty means https://api.openai.com/v1.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the API key. Default
	// OPENAI_API_KEY. An unset or empty variable sends no key (local servers).
	APIKeyEnv string `yaml:"api_key_env"`
	// Model is the model name the server knows (gpt-4o-mini, llama3.2).
	// Required when backend is openai.
	Model string `yaml:"model"`
	// SystemPrompt opens every request; the turn's notes and the long-term
	// memory follow it. Default: a short frontdesk prompt.
	SystemPrompt string `yaml:"system_prompt"`
	// Temperature is sent when set (0 to 2); null (the default) leaves it to the server.
	Temperature *float64 `yaml:"temperature"`
	// MaxTokens caps one reply; 0 (the default) leaves it to the server.
	MaxTokens int `yaml:"max_tokens"`
	// RequestTimeoutSec is the longest wait for the server to start
	// answering, and between two streamed chunks. Default 120.
	RequestTimeoutSec int `yaml:"request_timeout_sec"`
	// MaxToolSteps bounds the tool rounds (tool calls → results → next
	// request) in one turn; 0 offers no tools. Default 8.
	MaxToolSteps int `yaml:"max_tool_steps"`
	// ContextBudgetTokens bounds the prompt (system prompt, notes, memory,
	// recent conversation, input), estimated as bytes/4; the oldest
	// exchanges are left out first. Default 12000.
	ContextBudgetTokens int `yaml:"context_budget_tokens"`
	// Vision sends image attachments to the model as image content parts;
	// false (the default) only tells it in text that an image was attached.
	// Turn it on for a model that takes images (see README "Attachments").
	Vision bool `yaml:"vision"`
}

// Command configures the command backend: a program run once per turn.
type Command struct {
	// Argv is the program and its arguments; argv[0] is looked up in PATH.
	// Required when backend is command.
	Argv []string `yaml:"argv"`
	// Env is added to the program's minimal environment (PATH and HOME of
	// frontdesk), as NAME: value. Default none. Put no secrets here: use PassEnv.
	Env map[string]string `yaml:"env"`
	// PassEnv names variables copied from frontdesk's own environment (API
	// keys, for instance). Default none.
	PassEnv []string `yaml:"pass_env"`
	// TimeoutSec stops a turn's program after this many seconds; 0 means
	// no limit. Default 300.
	TimeoutSec int `yaml:"timeout_sec"`
}
