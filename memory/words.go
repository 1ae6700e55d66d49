package memory

// Who made an item and who edited it last, in words (the terminal's
// /memory; the web panel says the same in web/static/memwords.js).

// place is where a request came from, as a person says it.
func place(door string) string {
	switch door {
	case SourceWeb:
		return "the web page"
	case SourceConsole:
		return "the terminal"
	case SourceAPI:
		return "the API"
	case "email":
		return "email"
	case "webhook":
		return "the webhook"
	case "mcp":
		return "MCP"
	case "schedule":
		return "a schedule"
	case "":
		return "somewhere unknown"
	}
	return "“" + door + "”"
}

// MadeBy says who made it: "added in the terminal", "saved by the
// assistant, asked by email (eve@example.com)", "summarised by the
// assistant from a conversation". Items of earlier versions (no door)
// say only what they know.
func MadeBy(it Item) string {
	from := ""
	if it.From != "" {
		from = " (" + it.From + ")"
	}
	switch it.Source {
	case SourceAgent:
		if it.Door == "" {
			return "saved by the assistant"
		}
		how := "in "
		if it.Door == "email" {
			how = "by "
		}
		return "saved by the assistant, asked " + how + place(it.Door) + from
	case SourceConsolidation:
		return "summarised by the assistant from a conversation"
	case SourceWeb, SourceConsole, SourceAPI:
		return "added in " + place(it.Source) + from
	case "":
		return "saved"
	}
	return "saved by " + it.Source
}

// EditedBy says who edited it last: "edited in the web page", "edited"
// for an item an earlier version edited, "" for one never edited.
func EditedBy(it Item) string {
	if it.EditedBy != "" {
		return "edited in " + place(it.EditedBy)
	}
	if it.Updated.After(it.Created) {
		return "edited"
	}
	return ""
}
