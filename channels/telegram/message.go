package telegram

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

// message turns a Telegram message into the Door's; ok false for one the
// Door has nothing to do with (no sender, a bot's, a service message).
func (c *Connector) message(me *models.User, m *models.Message) (chat.Message, bool) {
	if m.From == nil || m.From.IsBot {
		return chat.Message{}, false
	}
	text, entities := m.Text, m.Entities
	if text == "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	from, aliases := account(m.From)
	out := chat.Message{
		ID:      strconv.Itoa(m.ID),
		Chat:    strconv.FormatInt(m.Chat.ID, 10),
		From:    from,
		Aliases: aliases,
		Direct:  m.Chat.Type == models.ChatTypePrivate,
		Files:   c.files(m),
	}
	if len(out.Files) == 0 && text == "" {
		return chat.Message{}, false
	}
	out.Mentioned = mentions(me, text, entities) ||
		(m.ReplyToMessage != nil && m.ReplyToMessage.From != nil && m.ReplyToMessage.From.ID == me.ID)
	out.Text = strings.TrimSpace(stripMention(me, text))
	return out, true
}

// account names a Telegram user as allow and people do: "@username" if
// they have one (their numeric id an alias), else the id.
func account(u *models.User) (string, []string) {
	id := strconv.FormatInt(u.ID, 10)
	if u.Username == "" {
		return id, nil
	}
	return "@" + u.Username, []string{id}
}

// mentions is whether text names the bot: an @mention of its username, a
// text mention of its account, or a command addressed to it
// (/cancel@frontdesk_bot). Entity offsets count UTF-16 units.
func mentions(me *models.User, text string, entities []models.MessageEntity) bool {
	units := utf16.Encode([]rune(text))
	for _, e := range entities {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > len(units) {
			continue
		}
		word := string(utf16.Decode(units[e.Offset : e.Offset+e.Length]))
		switch e.Type {
		case models.MessageEntityTypeMention:
			if strings.EqualFold(word, "@"+me.Username) {
				return true
			}
		case models.MessageEntityTypeTextMention:
			if e.User != nil && e.User.ID == me.ID {
				return true
			}
		case models.MessageEntityTypeBotCommand:
			if _, to, ok := strings.Cut(word, "@"); ok && strings.EqualFold(to, me.Username) {
				return true
			}
		}
	}
	return false
}

// stripMention drops a leading "@botname" ("@frontdesk_bot /cancel" is a
// command; the model needs no address).
func stripMention(me *models.User, text string) string {
	t := strings.TrimSpace(text)
	at := "@" + me.Username
	if me.Username != "" && len(t) >= len(at) && strings.EqualFold(t[:len(at)], at) {
		rest := t[len(at):]
		if rest == "" || rest[0] == ' ' || rest[0] == '\n' || rest[0] == ',' || rest[0] == ':' {
			return strings.TrimLeft(rest, " \n,:")
		}
	}
	return text
}

// files are a message's photo (its largest size) and document.
func (c *Connector) files(m *models.Message) []chat.File {
	var out []chat.File
	if len(m.Photo) > 0 {
		best := m.Photo[0]
		for _, p := range m.Photo[1:] {
			if p.Width*p.Height > best.Width*best.Height {
				best = p
			}
		}
		out = append(out, chat.File{Name: "photo-" + best.FileUniqueID + ".jpg", Size: int64(best.FileSize), Open: c.opener(best.FileID)})
	}
	if d := m.Document; d != nil {
		name := d.FileName
		if name == "" {
			name = "document-" + d.FileUniqueID
		}
		out = append(out, chat.File{Name: name, Size: d.FileSize, Open: c.opener(d.FileID)})
	}
	return out
}

// opener downloads a file: getFile for its path, then the file itself
// (the public Bot API serves up to 20 MB).
func (c *Connector) opener(fileID string) func(ctx context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) {
		f, err := c.bot.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
		if err != nil {
			return nil, apiError("getFile", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.bot.FileDownloadLink(f), nil)
		if err != nil {
			return nil, fmt.Errorf("telegram file: %w", c.hideToken(err))
		}
		resp, err := c.poll.Do(req)
		if err != nil {
			return nil, fmt.Errorf("telegram file: %w", c.hideToken(err))
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("telegram file %s: HTTP %d", f.FilePath, resp.StatusCode)
		}
		return resp.Body, nil
	}
}

// action turns a button press into the Door's: callback data
// "<decision>:<approval id>", answered with answerCallbackQuery.
func (c *Connector) action(q *models.CallbackQuery) chat.Action {
	from, aliases := account(&q.From)
	decision, approval, _ := strings.Cut(q.Data, ":")
	a := chat.Action{From: from, Aliases: aliases, Approval: approval, Decision: decision}
	switch {
	case q.Message.Message != nil:
		a.Chat, a.OnMessage = strconv.FormatInt(q.Message.Message.Chat.ID, 10), strconv.Itoa(q.Message.Message.ID)
	case q.Message.InaccessibleMessage != nil:
		a.Chat, a.OnMessage = strconv.FormatInt(q.Message.InaccessibleMessage.Chat.ID, 10), strconv.Itoa(q.Message.InaccessibleMessage.MessageID)
	}
	id := q.ID
	a.Answer = func(ctx context.Context, text string) {
		if _, err := c.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: id, Text: text}); err != nil {
			c.log.Warn("telegram: could not answer a button press", "err", apiError("answerCallbackQuery", err))
		}
	}
	return a
}
