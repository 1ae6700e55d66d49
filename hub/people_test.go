package hub

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// roleGate is a Gate of fixed permissions per person; approve, reset,
// forget and erase need a signed-in actor (as package people's).
type roleGate map[string][]string

func (g roleGate) Allow(a Actor, perm string) error {
	control := slices.Contains([]string{event.PermApprove, event.PermReset, event.PermForget, event.PermErase}, perm)
	if !slices.Contains(g[a.Person], perm) || (control && !a.SignedIn) {
		return &ForbiddenError{Person: a.Person, Permission: perm, Message: fmt.Sprintf("%s may not %s", a.Person, perm)}
	}
	return nil
}

func (g roleGate) Name(person string) string {
	return map[string]string{"ann": "Ann", "cy": "Cy"}[person]
}

var team = roleGate{
	"ann": event.Permissions,
	"bo":  {event.PermRead, event.PermTalk, event.PermCancel, event.PermMemory, event.PermSchedules},
	"cy":  {event.PermRead, event.PermTalk, event.PermApprove, event.PermReset, event.PermForget, event.PermErase},
	"di":  {event.PermRead},
}

func forbidden(t *testing.T, what string, err error, perm string) {
	t.Helper()
	var fe *ForbiddenError
	if !errors.As(err, &fe) || fe.Permission != perm {
		t.Fatalf("%s: %v, want a ForbiddenError for %s", what, err, perm)
	}
}

// Each permission the Gate refuses changes nothing: no event, the turn
// still runs, the approval still waits, the item is still there; and
// what is allowed says who did it.
func TestGateRefusalsChangeNothing(t *testing.T) {
	var runs atomic.Int32
	cfg := withItems(t, Config{Tools: dangerTools(&runs), Gate: team, ApprovalsNotSelf: true})
	h := startHub(t, cfg, riskyAgent{})
	s, _ := subscribe(t, h, 0)
	ctx := ctxT(t)
	ann := Actor{Door: "web", Person: "ann", SignedIn: true}

	it, err := h.MemorySave(ctx, "the boiler is in the cellar", ann)
	if err != nil {
		t.Fatal(err)
	}
	if e := until(t, s, event.MemoryChanged); data[event.MemoryChangedData](t, e[len(e)-1]).Person != "ann" {
		t.Fatalf("memory_changed %s has no person ann", e[len(e)-1].Data)
	}
	if _, err := h.Submit(ctx, Input{Channel: "web", Content: "delete it", ClientMsgID: "a1", Person: "ann", SignedIn: true}); err != nil {
		t.Fatal(err)
	}
	evs := until(t, s, event.ApprovalRequest)
	if u := data[event.UserData](t, evs[0]); evs[0].Type != event.User || u.Person != "ann" {
		t.Fatalf("first event %s %s, want ann's user event", evs[0].Type, evs[0].Data)
	}
	userSeq := evs[0].Seq
	req := data[event.ApprovalRequestData](t, evs[len(evs)-1])
	before, _ := h.Info(ctx)

	bo := Actor{Door: "web", Person: "bo", SignedIn: true}
	di := Actor{Door: "web", Person: "di", SignedIn: true}
	cyByEmail := Actor{Door: "email", Person: "cy"}
	_, err = h.Decide(ctx, req.ID, event.Approve, bo)
	forbidden(t, "bo approves", err, event.PermApprove)
	_, err = h.Decide(ctx, req.ID, event.Approve, cyByEmail)
	forbidden(t, "cy approves by email", err, event.PermApprove)
	_, err = h.Decide(ctx, req.ID, event.Approve, ann)
	forbidden(t, "ann approves her own turn's call (not_self)", err, event.PermApprove)
	_, err = h.Reset(ctx, ResetManual, bo)
	forbidden(t, "bo resets", err, event.PermReset)
	_, err = h.Erase(ctx, userSeq, bo)
	forbidden(t, "bo erases", err, event.PermErase)
	forbidden(t, "bo forgets", h.MemoryForget(ctx, it.ID, bo), event.PermForget)
	_, err = h.MemorySave(ctx, "di was here", di)
	forbidden(t, "di saves", err, event.PermMemory)
	_, err = h.MemoryEdit(ctx, it.ID, "di was here", di)
	forbidden(t, "di edits", err, event.PermMemory)
	_, err = h.CancelBy(ctx, di)
	forbidden(t, "di cancels", err, event.PermCancel)
	_, err = h.Submit(ctx, Input{Channel: "web", Content: "may I?", Person: "di", SignedIn: true})
	forbidden(t, "di talks", err, event.PermTalk)

	after, _ := h.Info(ctx)
	if after.LastSeq != before.LastSeq || !after.Busy || after.Generation != before.Generation {
		t.Fatalf("after the refusals: %+v, want last_seq %d, still busy, generation %d", after, before.LastSeq, before.Generation)
	}
	if items, _ := h.MemoryList(ctx); len(items) != 1 || items[0].Text != it.Text {
		t.Fatalf("items after the refusals: %+v", items)
	}

	// The approval still waits: cy, signed in, answers it.
	d, err := h.Decide(ctx, req.ID, event.Approve, Actor{Door: "web", Person: "cy", SignedIn: true})
	if err != nil || d.Person != "cy" || d.By != "web" {
		t.Fatalf("cy approves: %+v %v", d, err)
	}
	until(t, s, event.TurnEnd)
	if runs.Load() != 1 {
		t.Fatalf("the approved call ran %d times", runs.Load())
	}
	r, err := h.Reset(ctx, ResetManual, Actor{Door: "console", Person: "cy", SignedIn: true})
	if err != nil || r.Person != "cy" {
		t.Fatalf("cy resets: %+v %v", r, err)
	}
}

// A forwarded command is judged by the holder's Gate too, and its refusal
// comes back as the same ForbiddenError.
func TestForbiddenCrossesTheWire(t *testing.T) {
	fe := &ForbiddenError{Person: "bo", Permission: event.PermReset, Message: "bo may not reset the conversation"}
	back := toWireErr(fmt.Errorf("reset: %w", fe)).err()
	var got *ForbiddenError
	if !errors.As(back, &got) || *got != *fe {
		t.Fatalf("through the wire: %#v, want %#v", back, fe)
	}
	s, c := newMemStream(), &memCluster{}
	h, _ := joinNode(t, s, c, Config{Gate: team, DataDir: t.TempDir()}, testagent.NewGate())
	c.lead(t, h, s)
	for _, tc := range []struct {
		op   string
		req  any
		perm string
	}{
		{opReset, wireReset{Reason: ResetManual, Actor: Actor{Door: "web", Person: "bo", SignedIn: true}}, event.PermReset},
		{opCancel, Actor{Door: "web", Person: "di", SignedIn: true}, event.PermCancel},
		{opDecide, wireDecide{ID: "a1", Decision: event.Approve, By: "web", Actor: Actor{Door: "web", Person: "bo", SignedIn: true}}, event.PermApprove},
		{opErase, wireErase{Seq: 1, By: "web", Actor: Actor{Door: "web", Person: "bo", SignedIn: true}}, event.PermErase},
		{opSubmit, wireInput{Channel: "web", Content: "hi", Person: "di", SignedIn: true}, event.PermTalk},
	} {
		if got := serveRaw(t, h, tc.op, tc.req); got != tc.perm {
			t.Errorf("forwarded %s: answered %q, want forbidden %s", tc.op, got, tc.perm)
		}
	}
}

// Under not_self the asker may still say no to their own call.
func TestNotSelfMayDeny(t *testing.T) {
	var runs atomic.Int32
	h := startHub(t, Config{Tools: dangerTools(&runs), Gate: team, ApprovalsNotSelf: true}, riskyAgent{})
	s, _ := subscribe(t, h, 0)
	ctx := ctxT(t)
	ann := Actor{Door: "web", Person: "ann", SignedIn: true}
	if _, err := h.Submit(ctx, Input{Channel: "web", Content: "delete it", ClientMsgID: "n1", Person: "ann", SignedIn: true}); err != nil {
		t.Fatal(err)
	}
	req := approvalRequest(t, s)
	if d, err := h.Decide(ctx, req.ID, event.Deny, ann); err != nil || d.Decision != event.Deny || d.Person != "ann" {
		t.Fatalf("ann denies her own call: %+v %v", d, err)
	}
	until(t, s, event.TurnEnd)
	if runs.Load() != 0 {
		t.Fatal("a denied call ran")
	}
}
