package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/matrix"
	"github.com/frontdesk-hq/frontdesk/channels/slack"
	"github.com/frontdesk-hq/frontdesk/channels/telegram"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/people"
	"github.com/frontdesk-hq/frontdesk/web"
)

// The chat doors' wiring (Telegram, Matrix, Slack): each enabled door is
// its platform's connector joined to the session by a chat.Door. Like the
// email door, they run where the lease is: on a single node from the
// start, on a cluster on the holder (their state replicated).

// chatDoor is one wired chat door.
type chatDoor struct {
	name string
	door *chat.Door
	conn chat.Connector
}

// newChatDoors builds the enabled chat doors. A door enabled but unusable
// (its token variable empty, say) refuses to start the server, naming the
// door and the variable, rather than silently not answering.
func newChatDoors(cfg config.Config, a *app, getenv func(string) string, logger *slog.Logger, st *stores) ([]chatDoor, error) {
	var doors []chatDoor
	for _, name := range enabledChats(cfg) {
		conn, err := chatConnector(cfg, name, getenv, logger)
		if err != nil {
			return nil, fmt.Errorf("channels.%s: %w", name, err)
		}
		d, err := chat.New(a.hub, conn, chatOptions(cfg, name, st, a.state.ChatReplicate(name), logger))
		if err != nil {
			return nil, fmt.Errorf("channels.%s: %w", name, err)
		}
		doors = append(doors, chatDoor{name: name, door: d, conn: conn})
	}
	return doors, nil
}

// enabledChats names the chat doors config turns on, in chat.DoorNames'
// order.
func enabledChats(cfg config.Config) []string {
	c := cfg.Channels
	enabled := map[string]bool{event.ChannelTelegram: c.Telegram.Enabled, event.ChannelMatrix: c.Matrix.Enabled, event.ChannelSlack: c.Slack.Enabled}
	var on []string
	for _, name := range chat.DoorNames {
		if enabled[name] {
			on = append(on, name)
		}
	}
	return on
}

func chatOptions(cfg config.Config, name string, st *stores, replicate func([]byte) error, logger *slog.Logger) chat.Options {
	o := chat.Options{Door: name, Allow: chatAllow(cfg, name), DataDir: cfg.DataDir,
		MaxAttachments: cfg.Attachments.MaxPerMessage, Replicate: replicate, Logger: logger}
	if st.files != nil {
		o.Attachments = st.files
	}
	dir := st.people
	if dir.Implicit() {
		// One person on a laptop: the accounts on allow are theirs.
		if p := dir.FirstAdmin(); p != nil {
			o.Owner = p.ID
		}
	} else {
		o.People, o.Names = chatPeople(dir, name), dir.Name
	}
	return o
}

func chatAllow(cfg config.Config, name string) []string {
	switch name {
	case event.ChannelTelegram:
		return cfg.Channels.Telegram.Allow
	case event.ChannelMatrix:
		return cfg.Channels.Matrix.Allow
	}
	return cfg.Channels.Slack.Allow
}

// chatPeople is a chat door's people: the person whose accounts hold an
// account on this door, and whether they may talk.
func chatPeople(dir *people.Directory, door string) func(string) (string, bool) {
	return func(acct string) (string, bool) {
		p := dir.ByAccount(door, acct)
		if p == nil {
			return "", false
		}
		return p.ID, p.Can(event.PermTalk)
	}
}

// chatStatus is /api/session's doors: each chat door that runs here and
// how it is; unhealthy ones are /healthz reasons too (chatWarnings).
func (a *app) chatStatus() []web.DoorStatus {
	var out []web.DoorStatus
	for _, c := range a.chats {
		why := c.door.Health()
		out = append(out, web.DoorStatus{Door: c.name, Running: c.door.Running(), Healthy: why == "", Error: why})
	}
	return out
}

func (a *app) chatWarnings() []string {
	var w []string
	for _, c := range a.chats {
		if why := c.door.Health(); why != "" {
			w = append(w, why)
		}
	}
	return w
}

// chatConnector makes door name's connector from its config block; the
// secrets come from the variables the block names.
func chatConnector(cfg config.Config, name string, getenv func(string) string, logger *slog.Logger) (chat.Connector, error) {
	secret := func(key, env string) (string, error) {
		v := getenv(env)
		if v == "" {
			return "", fmt.Errorf("%s names %s, which is empty or not set: export it (or turn the door off)", key, env)
		}
		return v, nil
	}
	c := cfg.Channels
	switch name {
	case event.ChannelTelegram:
		tok, err := secret("token_env", c.Telegram.TokenEnv)
		if err != nil {
			return nil, err
		}
		return telegram.New(telegram.Options{Token: tok, BaseURL: c.Telegram.BaseURL, Logger: logger})
	case event.ChannelSlack:
		app, err := secret("app_token_env", c.Slack.AppTokenEnv)
		if err != nil {
			return nil, err
		}
		bot, err := secret("bot_token_env", c.Slack.BotTokenEnv)
		if err != nil {
			return nil, err
		}
		return slack.New(slack.Options{AppToken: app, BotToken: bot, APIURL: c.Slack.APIURL, Logger: logger})
	}
	m := c.Matrix
	o := matrix.Options{Homeserver: m.Homeserver, UserID: m.UserID, Encryption: m.Encryption, DataDir: cfg.DataDir, Logger: logger}
	var err error
	if m.AccessTokenEnv != "" {
		o.AccessToken, err = secret("access_token_env", m.AccessTokenEnv)
	} else {
		o.Password, err = secret("password_env", m.PasswordEnv)
	}
	if err != nil {
		return nil, err
	}
	return matrix.New(o)
}

// closeChats releases what the connectors hold open (Matrix's crypto.db)
// once the server is done; a door's Run has ended by then.
func (a *app) closeChats(logger *slog.Logger) {
	for _, c := range a.chats {
		if cl, ok := c.conn.(io.Closer); ok {
			if err := cl.Close(); err != nil {
				logger.Warn("close the "+c.name+" door", "err", err)
			}
		}
	}
}
