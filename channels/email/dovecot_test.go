package email

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"
)

const dovecotBin = "/usr/sbin/dovecot"

// dovecot is a real Dovecot IMAP server in a temp directory: a passwd-file
// user, maildir storage, plaintext auth on 127.0.0.1 only, a free port.
type dovecot struct {
	dir, conf, addr string
	cmd             *exec.Cmd
	done            chan error
}

// startDovecot starts Dovecot or, where it is not installed, skips the
// test — except in CI (.ci/run installs dovecot-imapd), where it fails.
func startDovecot(t *testing.T, login, pass string) *dovecot {
	t.Helper()
	if _, err := os.Stat(dovecotBin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing; CI must install dovecot-imapd (see .ci/run)", dovecotBin)
		}
		t.Skipf("%s not installed (apt-get install dovecot-imapd)", dovecotBin)
	}
	doveadm, err := exec.LookPath("doveadm")
	if err != nil {
		doveadm = "/usr/bin/doveadm"
	}
	d := &dovecot{dir: t.TempDir(), done: make(chan error, 1)}
	d.conf = filepath.Join(d.dir, "dovecot.conf")

	// Mail processes run as an unprivileged user: "nobody" when we are
	// root (Dovecot refuses uid 0 for mail), else ourselves.
	uid, gid, loginUser, internalUser, chroot := os.Getuid(), os.Getgid(), "", "", ""
	if os.Geteuid() == 0 {
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("look up nobody: %v", err)
		}
		uid, _ = strconv.Atoi(nobody.Uid)
		gid, _ = strconv.Atoi(nobody.Gid)
		loginUser, internalUser = "dovenull", "dovecot"
		// nobody must reach the maildir under the 0700 test temp dirs.
		for _, dir := range []string{filepath.Dir(d.dir), d.dir} {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		me, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		loginUser, internalUser = me.Username, me.Username
		chroot = "  chroot =\n" // only root can chroot the login process
	}
	mail := filepath.Join(d.dir, "mail")
	if err := os.MkdirAll(mail, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(mail, uid, gid); err != nil {
		t.Fatal(err)
	}
	passwd := filepath.Join(d.dir, "passwd")
	line := fmt.Sprintf("%s:{PLAIN}%s:%d:%d::%s::\n", login, pass, uid, gid, filepath.Join(mail, login))
	if err := os.WriteFile(passwd, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	d.addr = freePort(t)
	_, port, _ := net.SplitHostPort(d.addr)
	conf := fmt.Sprintf(`# written by frontdesk's email tests
base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:%[2]s/%%u
mailbox_idle_check_interval = 1 secs
first_valid_uid = %[3]d
last_valid_uid = %[3]d
first_valid_gid = %[4]d
last_valid_gid = %[4]d
default_login_user = %[5]s
default_internal_user = %[6]s
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[7]s
}
userdb {
  driver = passwd-file
  args = username_format=%%u %[7]s
}
service imap-login {
%[9]s  inet_listener imap {
    address = 127.0.0.1
    port = %[8]s
  }
  inet_listener imaps {
    port = 0
  }
}
service pop3-login {
  inet_listener pop3 {
    port = 0
  }
  inet_listener pop3s {
    port = 0
  }
}
service submission-login {
  inet_listener submission {
    port = 0
  }
}
`, d.dir, mail, uid, gid, loginUser, internalUser, passwd, port, chroot)
	if err := os.WriteFile(d.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}

	var stderr bytes.Buffer
	d.cmd = exec.Command(dovecotBin, "-F", "-c", d.conf)
	d.cmd.Stdout, d.cmd.Stderr = &stderr, &stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start dovecot: %v", err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		stop := exec.Command(doveadm, "-c", d.conf, "stop")
		if out, err := stop.CombinedOutput(); err != nil {
			t.Logf("doveadm stop: %v: %s", err, out)
		}
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			d.cmd.Process.Kill()
			<-d.done
			t.Error("dovecot did not stop within 5s of doveadm stop")
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(d.dir, "dovecot.log"))
			t.Logf("dovecot output:\n%s\ndovecot.log:\n%s", stderr.String(), log)
		}
	})
	// Ready when the IMAP port answers.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", d.addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-d.done:
			log, _ := os.ReadFile(filepath.Join(d.dir, "dovecot.log"))
			t.Fatalf("dovecot exited: %v\n%s\n%s", err, stderr.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("dovecot did not listen on %s", d.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return d
}

// freePort finds a free 127.0.0.1 port (closed again for Dovecot to take).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// appendMail APPENDs raw to the user's INBOX over IMAP, as delivery would.
func appendMail(t *testing.T, addr, user, pass, raw string) {
	t.Helper()
	cl, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Login(user, pass).Wait(); err != nil {
		t.Fatal(err)
	}
	cmd := cl.Append("INBOX", int64(len(raw)), nil)
	if _, err := cmd.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Wait(); err != nil {
		t.Fatalf("append: %v", err)
	}
	_ = cl.Logout().Wait()
}

func TestDovecotEndToEnd(t *testing.T) {
	const user, pass = "assistant", "dovecot-secret"
	d := startDovecot(t, user, pass)
	e := newEnv(t)
	e.start(func(o *Options) {
		o.IMAP.Addr, o.IMAP.Username, o.IMAP.Password = d.addr, user, pass
	})
	e.connected()

	ignored := newMail(mallory, "not for you", "hello")
	auto := newMail(ana, "Out of office", "I am away", "Auto-Submitted: auto-replied")
	wanted := newMail(ana, "Dovecot?", "Does this work with a real server?\n\n> old quote")
	for _, raw := range []string{ignored, auto, wanted} {
		appendMail(t, d.addr, user, pass, raw)
	}
	got := e.smtp.next(t)
	if inReplyTo(got) != messageID(wanted) {
		t.Fatalf("answered %q, want %q", inReplyTo(got), messageID(wanted))
	}
	if subj, _ := got.Header.Text("Subject"); subj != "Re: Dovecot?" {
		t.Errorf("subject %q", subj)
	}
	if want := "reply to: Subject: Dovecot?\n\nDoes this work with a real server?"; strings.TrimSpace(strings.ReplaceAll(got.Body, "\r\n", "\n")) != want {
		t.Errorf("body %q, want %q", got.Body, want)
	}

	// Mail arriving while frontdesk is down is answered after a restart;
	// nothing is answered twice.
	e.stop()
	later := newMail(bob, "while down", "still there?")
	appendMail(t, d.addr, user, pass, later)
	p := e.start(func(o *Options) {
		o.IMAP.Addr, o.IMAP.Username, o.IMAP.Password = d.addr, user, pass
	})
	if got := e.smtp.next(t); inReplyTo(got) != messageID(later) {
		t.Fatalf("after restart answered %q, want %q", inReplyTo(got), messageID(later))
	}
	e.stop()
	e.smtp.none(t)
	if m := p.ch.Metrics(); m.Replies != 1 {
		t.Errorf("second run sent %d replies, want 1", m.Replies)
	}
	seen := imapSeen(t, d.addr, user, pass)
	if len(seen) != 4 {
		t.Fatalf("mailbox holds %d messages, want 4", len(seen))
	}
	for uid, s := range seen {
		if !s {
			t.Errorf("message %d is not \\Seen", uid)
		}
	}
	if !strings.Contains(e.logs.String(), "reason="+SkipNotAllowed) || !strings.Contains(e.logs.String(), "reason="+SkipAutoSubmitted) {
		t.Error("the skipped mail was not logged with its reason")
	}
}
