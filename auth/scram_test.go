package auth

import (
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

// exchange runs a whole SCRAM exchange between xdg-go/scram's client with
// password and our server over the stored verifier.
func exchange(t *testing.T, verifier, password string) bool {
	t.Helper()
	cred, err := ParseVerifier(verifier)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewConversation(cred)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := scram.SHA256.NewClient("", password, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := cl.NewConversation()
	msg, _ := conv.Step("")
	for !srv.conv.Done() {
		reply, err := srv.Step(msg)
		if err != nil {
			return false
		}
		if msg, err = conv.Step(reply); err != nil {
			return false
		}
	}
	return srv.Valid() && conv.Valid()
}

func TestVerifierAuthenticates(t *testing.T) {
	v, err := NewVerifier("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(v, "correct horse") || !strings.HasPrefix(v, "SCRAM-SHA-256$4096:") {
		t.Fatalf("verifier %q: want PostgreSQL's format without the password", v)
	}
	if !exchange(t, v, "correct horse") {
		t.Error("the right password was refused")
	}
	if exchange(t, v, "correct horse!") {
		t.Error("a wrong password was accepted")
	}
	w, _ := NewVerifier("correct horse")
	if w == v {
		t.Error("two verifiers of one password are equal: the salt is not random")
	}
}

func TestDecoyRefusesEverything(t *testing.T) {
	srv, err := NewConversation(Decoy([]byte("server secret"), "mallory"))
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := scram.SHA256.NewClient("", "", "")
	conv := cl.NewConversation()
	msg, _ := conv.Step("")
	reply, err := srv.Step(msg)
	if err != nil {
		t.Fatalf("the decoy must answer the first message like a real user: %v", err)
	}
	msg, _ = conv.Step(reply)
	if _, err := srv.Step(msg); err == nil || srv.Valid() {
		t.Fatal("the decoy accepted a proof")
	}
}

func TestParseVerifierRejectsGarbage(t *testing.T) {
	for _, v := range []string{"", "md5abc", "SCRAM-SHA-256$x:c2FsdA==$a:b", "SCRAM-SHA-256$4096:c2FsdA==", "SCRAM-SHA-256$4096:%%$a:b"} {
		if _, err := ParseVerifier(v); err == nil {
			t.Errorf("%q parsed", v)
		}
	}
}

// TestDecoySaltIsStable: an unknown user is sent the same salt at every
// attempt (as a real user is), a different one from another unknown user
// and under another secret.
func TestDecoySaltIsStable(t *testing.T) {
	secret := []byte("server secret")
	a, b := Decoy(secret, "mallory"), Decoy(secret, "mallory")
	if a.Salt != b.Salt || len(a.Salt) != 16 || a.Iters != Iterations {
		t.Errorf("salts of two attempts: %x %x", a.Salt, b.Salt)
	}
	if Decoy(secret, "trudy").Salt == a.Salt || Decoy([]byte("other"), "mallory").Salt == a.Salt {
		t.Error("the salt does not depend on the user and the secret")
	}
}

func TestCheckPassword(t *testing.T) {
	v, err := NewVerifier("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	cred, err := ParseVerifier(v)
	if err != nil {
		t.Fatal(err)
	}
	if !CheckPassword(cred, "correct horse") {
		t.Error("the right password was refused")
	}
	for _, wrong := range []string{"", "correct horse ", "Correct horse", "correct"} {
		if CheckPassword(cred, wrong) {
			t.Errorf("password %q was accepted", wrong)
		}
	}
	if CheckPassword(Decoy([]byte("secret"), "nobody"), "correct horse") {
		t.Error("a decoy accepted a password")
	}
}
