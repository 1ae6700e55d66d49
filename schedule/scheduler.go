// Package schedule is the door for reminders and recurring tasks: a
// schedule is an input (its content) that enters the one shared session
// at a time — once (at) or on a cron expression in a time zone — as a
// user event of channel "schedule" carrying its schedule_id, seen by
// every client like any other input.
//
// Schedules live in data_dir/schedules.json (atomic writes, 0600). One
// goroutine (Scheduler.Run) owns them: the API, the agent's tools and the
// REPL send it commands.
//
// Exactly once: before a firing is submitted it is recorded in the file
// (Schedule.Firing, with a client_msg_id made of the schedule's id and the
// due time), and it is cleared only after its turn ended. After a crash a
// recorded firing is offered to the session again with the same
// client_msg_id: the session runs it if it never recorded it, and answers
// a duplicate (with the original turn's outcome) if it did.
//
// Downtime: a one-shot missed while the server was stopped runs once at
// start, marked late; a recurring one runs at its next time after the
// start, not once per missed time.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/idle"
)

// Session is the part of the hub the scheduler uses.
type Session interface {
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
	Info(ctx context.Context) (hub.Info, error)
}

var _ Session = (*hub.SessionManager)(nil)

// Mailer sends a mail that is not a reply (the email channel's outbox).
// Notify must be idempotent for a key while the mail is unsent, and must
// not block on the network.
type Mailer interface {
	Notify(key, to, subject, body string) error
}

// Options configure a Scheduler. Zero values mean the defaults noted.
type Options struct {
	// DataDir holds schedules.json. Required.
	DataDir string
	// Clock drives the timer and says what time it is. Default idle.System().
	Clock idle.Clock
	// MinInterval is the shortest time allowed between two runs of a
	// recurring schedule. Default 60 s (every minute is allowed).
	MinInterval time.Duration
	// MaxSchedules caps how many schedules exist at once. Default 1000.
	MaxSchedules int
	// MaxContentBytes caps a schedule's content (schedules.max_content_bytes,
	// or server.max_message_bytes when that is smaller). Default 4096.
	MaxContentBytes int
	// TZ is the zone of a schedule that names none. Default time.Local.
	TZ *time.Location
	// Mailer and NotifyTo make notify email and auto available; nil or
	// empty: schedules asking for them are refused.
	Mailer   Mailer
	NotifyTo string
	// Changed, if set, is called after each change of the list written to
	// schedules.json (a schedule created, fired, moved on, settled or
	// cancelled), so clients showing the list can look again. It runs on
	// Run's goroutine and must not block.
	Changed func()
	// Logger receives operational messages. Default slog.Default().
	Logger *slog.Logger
	// Replicate, if set, is given the bytes of schedules.json after each
	// write of it, on Run's goroutine, before anything that write records
	// happens (a firing is submitted only once it is replicated). An error
	// fails the change as a failed write would (cluster: the copy a new
	// holder reads after a failover).
	Replicate func(b []byte) error
	// RetryAfter is the wait before a firing the session refused (full
	// queue, storage fault) or a failed write of schedules.json is tried
	// again. Default 30 s.
	RetryAfter time.Duration

	// step, if set, is told each step of a firing (tests): "recorded"
	// (in the file, not yet submitted), "submitted" (the session took
	// it), "settled" (its turn is over and the record cleared). true
	// stops there dead, as if the process had died: Run returns at
	// "recorded", the firing's goroutine gives up at "submitted". It
	// must not block.
	step func(name, key string) bool
}

// lateAfter: a firing this long after its due time while the server ran
// (the machine slept, schedules.json could not be written) is marked
// late. One missed while the server was stopped is late however little
// it missed by.
const lateAfter = time.Minute

// errCrash is how a simulated crash (Options.crash) unwinds.
var errCrash = errors.New("simulated crash")

// Scheduler owns the schedules. Create it with Open and run it with Run;
// Create, List and Cancel may be called from any goroutine and wait for
// Run to answer.
type Scheduler struct {
	opts Options
	sess Session
	path string
	log  *slog.Logger
	cmds chan any
	// done is closed when Run returns; Reload makes a new one for the
	// next Run (a cluster node that leads again).
	doneMu sync.Mutex
	done   chan struct{}
	runs   sync.WaitGroup // firings under way
	// damage is what Open found wrong with schedules.json, opened when
	// (opened is moved by Reload, which runs before Run);
	// set before Open returns and never changed, so any goroutine may
	// read them.
	damage *Damage
	opened time.Time

	// Owned by Run.
	all   map[string]*Schedule
	retry map[string]time.Time // schedule id → when to offer its firing again
	hold  time.Time            // after a failed write: fire nothing before this
	alarm *alarm
	// pending are the firings submit queued; Run starts them once the
	// alarm is set (see alarm).
	pending []Schedule
}

// Open reads DataDir/schedules.json; nothing runs until Run.
func Open(sess Session, opts Options) (*Scheduler, error) {
	if opts.DataDir == "" {
		return nil, errors.New("schedules: no data directory")
	}
	if opts.Clock == nil {
		opts.Clock = idle.System()
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = time.Minute
	}
	if opts.MaxSchedules <= 0 {
		opts.MaxSchedules = 1000
	}
	if opts.MaxContentBytes <= 0 {
		opts.MaxContentBytes = 4096
	}
	if opts.TZ == nil {
		opts.TZ = time.Local
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 30 * time.Second
	}
	path := storePath(opts.DataDir)
	list, damage, err := load(path, opts.Clock.Now())
	if err != nil {
		return nil, err
	}
	s := &Scheduler{opts: opts, sess: sess, path: path, log: opts.Logger.With("door", "schedule"),
		cmds: make(chan any, 16), done: make(chan struct{}), damage: damage, opened: opts.Clock.Now(),
		all: make(map[string]*Schedule, len(list)), retry: map[string]time.Time{}}
	if damage != nil {
		s.log.Error(damage.Message(), "kept_as", damage.File, "dropped", len(damage.Dropped), "loaded", damage.Loaded)
	}
	for _, sc := range list {
		s.all[sc.ID] = sc
	}
	return s, nil
}

// Reload reads schedules.json again, for a cluster node that has just
// been given the schedules of the holder before it (the file was
// replaced while this Scheduler was not running). Call it only while Run
// is not running. Damage found now is logged and the file kept aside as at Open;
// Damage still reports what Open found.
func (s *Scheduler) Reload() error {
	list, damage, err := load(s.path, s.opts.Clock.Now())
	if err != nil {
		return err
	}
	if damage != nil {
		s.log.Error(damage.Message(), "kept_as", damage.File, "dropped", len(damage.Dropped), "loaded", damage.Loaded)
	}
	s.all = make(map[string]*Schedule, len(list))
	for _, sc := range list {
		s.all[sc.ID] = sc
	}
	s.retry, s.hold, s.pending = map[string]time.Time{}, time.Time{}, nil
	s.doneMu.Lock()
	select {
	case <-s.done:
		s.done = make(chan struct{}) // for the next Run
	default:
	}
	s.doneMu.Unlock()
	s.opened = s.opts.Clock.Now()
	return nil
}

// Damage reports what a damaged schedules.json cost at start (nil: the
// file was sound or missing). It stays the same until the next start.
// Safe from any goroutine.
func (s *Scheduler) Damage() *Damage { return s.damage }

// Commands sent to Run.
type (
	createCmd struct {
		spec  Spec
		reply chan result
	}
	listCmd   struct{ reply chan []Schedule }
	cancelCmd struct {
		id    string
		reply chan result
	}
	result struct {
		s   Schedule
		err error
	}
	// ranCmd reports how a firing went: retry (the session did not take
	// it) or over (its turn ended, or it can never run).
	ranCmd struct {
		id, key string
		retry   bool
	}
)

// Run fires schedules until ctx ends; call it once, or again only after
// Reload (a cluster node runs it each time it leads). Firings under way
// when ctx ends stay recorded and are offered again at the next start.
func (s *Scheduler) Run(ctx context.Context) error {
	s.doneMu.Lock()
	done := s.done
	s.doneMu.Unlock()
	defer close(done)
	defer s.runs.Wait()
	s.alarm = newAlarm(s.opts.Clock)
	defer s.alarm.timer.Stop()
	s.start()
	for {
		s.rearm()
		s.launch(ctx)
		select {
		case <-ctx.Done():
			return nil
		case c := <-s.cmds:
			s.handle(ctx, c)
		case <-s.alarm.timer.C():
			s.alarm.rang()
			if err := s.fireDue(ctx); err != nil {
				return err
			}
		}
	}
}

// rearm sets the alarm to the next wake.
func (s *Scheduler) rearm() { s.alarm.set(s.nextWake()) }

// launch starts the firings submit queued, once the alarm is set.
func (s *Scheduler) launch(ctx context.Context) {
	for _, snap := range s.pending {
		s.runs.Add(1)
		go func() {
			defer s.runs.Done()
			retry, ok := s.run(ctx, snap)
			if !ok {
				return // stopping: the firing stays recorded
			}
			select {
			case s.cmds <- ranCmd{id: snap.ID, key: snap.Firing.Key, retry: retry}:
			case <-ctx.Done():
			}
		}()
	}
	s.pending = nil
}

// start applies the downtime rules: recorded firings are offered again;
// a recurring schedule whose time passed while stopped moves on to its
// next time; a one-shot that passed is left due (it fires late).
func (s *Scheduler) start() {
	now := s.opts.Clock.Now()
	changed := false
	for _, sc := range s.sorted() {
		if sc.recurring() && sc.NextRun != nil && !sc.NextRun.After(now) {
			missed := *sc.NextRun
			s.advance(sc, now)
			changed = true
			s.log.Info("recurring schedule missed while stopped; it runs at its next time",
				"id", sc.ID, "missed", missed, "next_run", sc.NextRun)
		}
		if sc.Firing != nil {
			s.submit(sc)
		}
	}
	if changed {
		if err := s.save(); err != nil {
			s.log.Error("save schedules", "err", err)
		}
	}
}

func (s *Scheduler) handle(ctx context.Context, c any) {
	switch c := c.(type) {
	case createCmd:
		sc, err := s.create(c.spec)
		s.rearm()
		c.reply <- result{sc, err}
	case listCmd:
		out := make([]Schedule, 0, len(s.all))
		for _, sc := range s.sorted() {
			out = append(out, sc.clone())
		}
		c.reply <- out
	case cancelCmd:
		sc, err := s.cancel(c.id)
		s.rearm()
		c.reply <- result{sc, err}
	case ranCmd:
		s.ran(ctx, c)
	default:
		panic(fmt.Sprintf("schedule: unknown command %T", c))
	}
}

func (s *Scheduler) create(sp Spec) (Schedule, error) {
	if len(s.all) >= s.opts.MaxSchedules {
		return Schedule{}, errorf(CodeTooMany, "there are already %d schedules, the most allowed; cancel some first", len(s.all))
	}
	sc, err := s.build(sp, s.opts.Clock.Now())
	if err != nil {
		return Schedule{}, err
	}
	s.all[sc.ID] = sc
	if err := s.save(); err != nil {
		delete(s.all, sc.ID)
		return Schedule{}, err
	}
	s.log.Info("schedule created", "id", sc.ID, "next_run", sc.NextRun, "cron", sc.Cron, "tz", sc.TZ, "by", sc.CreatedBy)
	return sc.clone(), nil
}

func (s *Scheduler) cancel(id string) (Schedule, error) {
	sc, ok := s.all[id]
	if !ok {
		return Schedule{}, errorf(CodeNotFound, "no schedule %q (list them with GET /api/schedules)", id)
	}
	delete(s.all, id)
	if err := s.save(); err != nil {
		s.all[id] = sc
		return Schedule{}, err
	}
	delete(s.retry, id)
	s.log.Info("schedule cancelled", "id", id)
	return sc.clone(), nil
}

// nextWake is when Run must look again: the earliest next run or retry.
// A linear scan: see BenchmarkNextWake for what 10,000 schedules cost.
func (s *Scheduler) nextWake() (time.Time, bool) {
	var at time.Time
	ok := false
	consider := func(t time.Time) {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	for _, sc := range s.all {
		if sc.NextRun != nil {
			consider(*sc.NextRun)
		}
	}
	for _, t := range s.retry {
		consider(t)
	}
	if ok && at.Before(s.hold) {
		at = s.hold
	}
	return at, ok
}

// fireDue fires every schedule that is due, earliest first, and offers
// again the firings whose retry time came.
func (s *Scheduler) fireDue(ctx context.Context) error {
	now := s.opts.Clock.Now()
	if now.Before(s.hold) {
		return nil
	}
	for _, sc := range s.sorted() {
		if t, ok := s.retry[sc.ID]; ok && !t.After(now) {
			delete(s.retry, sc.ID)
			if sc.Firing != nil {
				s.submit(sc)
			}
		}
		if sc.NextRun == nil || sc.NextRun.After(now) {
			continue
		}
		if err := s.fire(ctx, sc, now); err != nil {
			return err
		}
		if now.Before(s.hold) {
			return nil // a write failed: try the rest later too
		}
	}
	return nil
}

// fire records a firing of sc and hands it to the session.
func (s *Scheduler) fire(ctx context.Context, sc *Schedule, now time.Time) error {
	due := *sc.NextRun
	if sc.Firing != nil {
		// The last run still waits or runs: this one is skipped rather
		// than piled up behind it.
		old := *sc.NextRun
		s.advance(sc, now)
		if err := s.save(); err != nil {
			sc.NextRun = &old
			s.failedWrite(now, err)
			return nil
		}
		s.log.Warn("schedule skipped: its previous run has not finished", "id", sc.ID, "due", due)
		return nil
	}
	f := &Firing{Due: due, Key: fmt.Sprintf("schedule:%s:%d", sc.ID, due.Unix()), Late: due.Before(s.opened) || now.Sub(due) > lateAfter}
	f.Email = s.wantsEmail(ctx, sc)
	before := sc.clone()
	at := now.UTC()
	sc.Firing, sc.LastRun = f, &at
	s.advance(sc, now)
	if err := s.save(); err != nil {
		*sc = before
		s.failedWrite(now, err)
		return nil
	}
	if s.step("recorded", f.Key) {
		return errCrash
	}
	s.log.Info("schedule fired", "id", sc.ID, "due", due, "late", f.Late, "email", f.Email)
	s.submit(sc)
	return nil
}

func (s *Scheduler) failedWrite(now time.Time, err error) {
	s.hold = now.Add(s.opts.RetryAfter)
	s.log.Error("save schedules; firing again later", "err", err, "retry_in", s.opts.RetryAfter)
}

// advance moves sc past now: a recurring one to its next time, a
// one-shot to none.
func (s *Scheduler) advance(sc *Schedule, now time.Time) {
	if !sc.recurring() {
		sc.NextRun = nil
		return
	}
	n := next(sc.sched, now, sc.loc)
	if n.IsZero() {
		sc.NextRun = nil
		return
	}
	n = n.UTC()
	sc.NextRun = &n
}

// wantsEmail decides at fire time whether the reply is mailed.
func (s *Scheduler) wantsEmail(ctx context.Context, sc *Schedule) bool {
	switch sc.Notify {
	case NotifyEmail:
		return s.opts.Mailer != nil
	case NotifyAuto:
		if s.opts.Mailer == nil {
			return false
		}
		info, err := s.sess.Info(ctx)
		return err == nil && info.Subscribers == 0
	}
	return false
}

// ran settles a firing reported by its goroutine.
func (s *Scheduler) ran(ctx context.Context, c ranCmd) {
	sc, ok := s.all[c.id]
	if !ok || sc.Firing == nil || sc.Firing.Key != c.key {
		return // cancelled meanwhile
	}
	now := s.opts.Clock.Now()
	if c.retry {
		s.retry[c.id] = now.Add(s.opts.RetryAfter)
		return
	}
	sc.Firing = nil
	if !sc.recurring() {
		delete(s.all, c.id)
	}
	if err := s.save(); err != nil {
		// On disk the firing is still recorded: at the next start it is
		// offered again and the session answers it as a duplicate.
		s.log.Error("save schedules", "err", err)
	}
	s.rearm()
	s.step("settled", c.key)
}

// step reports a step of a firing to Options.step.
func (s *Scheduler) step(name, key string) bool {
	return s.opts.step != nil && s.opts.step(name, key)
}

// save writes every schedule to disk, then tells Options.Changed. A
// failure is an *Error.
func (s *Scheduler) save() error {
	b, err := saveBytes(s.path, s.all)
	if err != nil {
		code := "storage_error"
		if errors.Is(err, syscall.ENOSPC) {
			code = "storage_full"
		}
		return &Error{Code: code, Message: "could not write schedules.json: " + err.Error()}
	}
	if s.opts.Replicate != nil {
		if err := s.opts.Replicate(b); err != nil {
			return &Error{Code: "storage_error", Message: "could not replicate schedules.json to the cluster: " + err.Error()}
		}
	}
	if s.opts.Changed != nil {
		s.opts.Changed()
	}
	return nil
}

// sorted returns the schedules by creation.
func (s *Scheduler) sorted() []*Schedule {
	list := slices.Collect(maps.Values(s.all))
	sortSchedules(list)
	return list
}

// submit queues sc's recorded firing; Run's launch hands it to the session
// on a goroutine of its own, which waits for the turn's outcome and
// reports back.
func (s *Scheduler) submit(sc *Schedule) {
	s.pending = append(s.pending, sc.clone())
}

// run submits one firing and waits for its turn to end; it mails the
// reply when the firing says so. ok is false when ctx ended first.
func (s *Scheduler) run(ctx context.Context, sc Schedule) (retry, ok bool) {
	f := sc.Firing
	content := sc.Content
	if f.Late {
		content = s.lateNote(sc) + " " + content
	}
	done := make(chan hub.TurnOutcome, 1)
	_, err := s.sess.Submit(ctx, hub.Input{Channel: event.ChannelSchedule, Content: content, ClientMsgID: f.Key,
		Patient: true, ScheduleID: sc.ID, Done: done, Person: sc.Person})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, hub.ErrClosed) {
			return false, false
		}
		var (
			in *hub.InputError
			fe *hub.ForbiddenError
		)
		switch {
		case errors.As(err, &fe):
			// Its creator may no longer talk (their role changed, or they
			// left people): this firing does not run; the schedule stays
			// listed for someone who may to cancel it.
			s.log.Error("schedule not run: its creator may no longer talk to the assistant", "id", sc.ID, "person", sc.Person, "err", err)
			return false, true
		case errors.As(err, &in):
			s.log.Error("the session refuses this schedule's input; dropping the firing", "id", sc.ID, "err", err)
			return false, true
		}
		s.log.Warn("the session did not take a schedule's input; trying again", "id", sc.ID, "err", err, "retry_in", s.opts.RetryAfter)
		return true, true
	}
	if s.step("submitted", f.Key) {
		return false, false
	}
	var o hub.TurnOutcome
	select {
	case o = <-done:
	case <-ctx.Done():
		return false, false
	}
	switch {
	case o.Status == hub.StatusStillQueued:
		// The session stopped first; it keeps the input queued and runs
		// it after the restart, when this firing is offered again and
		// answered as a duplicate with the real outcome.
		return false, false
	case o.Turn == "":
		// It never ran (the session stopped, or could not record it).
		if ctx.Err() != nil {
			return false, false
		}
		return true, true
	}
	if f.Email {
		s.mail(sc, o)
	}
	return false, true
}

// lateNote says why a late firing is late: missed while the server was
// stopped, or run this long after its time.
func (s *Scheduler) lateNote(sc Schedule) string {
	loc := sc.loc
	if loc == nil {
		loc = s.opts.TZ
	}
	due := sc.Firing.Due
	at := due.In(loc).Format("Mon 2 Jan 15:04 MST")
	if due.Before(s.opened) || sc.LastRun == nil {
		return fmt.Sprintf("(late: this was due %s, while the server was not running)", at)
	}
	return fmt.Sprintf("(late: this was due %s and runs %s after it)", at, sc.LastRun.Sub(due).Round(time.Second))
}

// mail puts the reply of a fired schedule into the email outbox.
func (s *Scheduler) mail(sc Schedule, o hub.TurnOutcome) {
	subject := shorten(sc.Content, 70)
	if !strings.HasPrefix(strings.ToLower(subject), "reminder") {
		subject = "Reminder: " + subject
	}
	body := o.Reply
	if o.Status != event.StatusCompleted {
		body = fmt.Sprintf("The scheduled message ran, but its reply ended %s. %s\n\n%s", o.Status, o.Error, o.Reply)
	}
	body += fmt.Sprintf("\n\n--\nfrontdesk schedule %s (%q), due %s", sc.ID, shorten(sc.Content, 200), sc.Firing.Due.Format(time.RFC3339))
	if err := s.opts.Mailer.Notify(sc.Firing.Key, s.opts.NotifyTo, subject, body); err != nil {
		s.log.Error("mail a schedule's reply", "id", sc.ID, "err", err)
	}
}

// shorten cuts s to n runes on one line.
func shorten(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' {
			r = r[:i]
			break
		}
	}
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

// call sends c and waits for the answer on reply.
func call[T any](ctx context.Context, s *Scheduler, c any, reply chan T) (T, error) {
	var zero T
	s.doneMu.Lock()
	done := s.done
	s.doneMu.Unlock()
	select {
	case s.cmds <- c:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-done:
		return zero, ErrStopped
	}
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-done:
		select {
		case r := <-reply: // answered just before stopping
			return r, nil
		default:
			return zero, ErrStopped
		}
	}
}

// ErrStopped: the scheduler is not running (shutdown, or on a cluster
// node that stopped leading); the request was not carried out.
var ErrStopped = &Error{Code: "shutting_down", Message: "the scheduler has stopped"}

// Create makes a schedule from sp. A refusal is an *Error and nothing was
// written.
func (s *Scheduler) Create(ctx context.Context, sp Spec) (Schedule, error) {
	reply := make(chan result, 1)
	r, err := call(ctx, s, createCmd{sp, reply}, reply)
	if err != nil {
		return Schedule{}, err
	}
	return r.s, r.err
}

// List returns every schedule, oldest first.
func (s *Scheduler) List(ctx context.Context) ([]Schedule, error) {
	reply := make(chan []Schedule, 1)
	return call(ctx, s, listCmd{reply}, reply)
}

// Cancel deletes a schedule and returns it. A firing already handed to
// the session still runs.
func (s *Scheduler) Cancel(ctx context.Context, id string) (Schedule, error) {
	reply := make(chan result, 1)
	r, err := call(ctx, s, cancelCmd{id, reply}, reply)
	if err != nil {
		return Schedule{}, err
	}
	return r.s, r.err
}
