package config

// Attachments configures the attachment store (data_dir/attachments).
type Attachments struct {
	// MaxBytes caps each file, uploaded or from email. Default 20971520
	// (20 MiB).
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxPerMessage caps the files one message may carry. Default 10.
	MaxPerMessage int `yaml:"max_per_message"`
}

// defaultAttachments are the defaults of the attachments block.
func defaultAttachments() Attachments {
	return Attachments{MaxBytes: 20 << 20, MaxPerMessage: 10}
}

// validateAttachments checks the attachments block.
func (c *Config) validateAttachments(bad func(string, string, ...any)) {
	if a := c.Attachments.MaxBytes; a < 1024 || a > 1<<30 {
		bad("attachments.max_bytes", "%d: use 1024 to 1073741824 bytes (default 20971520, 20 MiB)", a)
	}
	if n := c.Attachments.MaxPerMessage; n < 1 || n > 100 {
		bad("attachments.max_per_message", "%d: use 1 to 100 (default 10)", n)
	}
}
