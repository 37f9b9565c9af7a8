// Package auth keeps analysts' passwords as SCRAM-SHA-256 verifiers (RFC
// 5802, RFC 7677) in PostgreSQL's format, and runs the server side of a
// SCRAM exchange against them. The password itself is never stored: a
// verifier lets the server check a client's proof, not log in as the
// client. The SCRAM arithmetic is github.com/xdg-go/scram's.
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/xdg-go/scram"
)

// Iterations is the PBKDF2 iteration count of new verifiers, PostgreSQL's
// default.
const Iterations = 4096

// ErrBadVerifier: a stored verifier that is not in PostgreSQL's format.
var ErrBadVerifier = errors.New("malformed SCRAM verifier")

// NewVerifier derives a SCRAM-SHA-256 verifier from a password with a
// fresh random salt:
//
//	SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>
//
// (base64), as PostgreSQL stores it in pg_authid.
func NewVerifier(password string) (string, error) {
	if password == "" {
		return "", errors.New("the password must not be empty")
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	return verifier(password, salt, Iterations)
}

func verifier(password string, salt []byte, iters int) (string, error) {
	// SASLprep the password, as PostgreSQL does; a password it cannot
	// prepare is used as its bytes, as PostgreSQL does too.
	c, err := scram.SHA256.NewClient("", password, "")
	if err != nil {
		c, _ = scram.SHA256.NewClientUnprepped("", password, "")
	}
	cred, err := c.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return "", err
	}
	enc := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iters, enc(salt), enc(cred.StoredKey), enc(cred.ServerKey)), nil
}

// ParseVerifier reads a verifier made by NewVerifier (or by PostgreSQL).
func ParseVerifier(v string) (scram.StoredCredentials, error) {
	var cred scram.StoredCredentials
	rest, ok := strings.CutPrefix(v, "SCRAM-SHA-256$")
	if !ok {
		return cred, ErrBadVerifier
	}
	factors, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return cred, ErrBadVerifier
	}
	iters, salt, ok1 := strings.Cut(factors, ":")
	stored, server, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return cred, ErrBadVerifier
	}
	n, err := strconv.Atoi(iters)
	if err != nil || n < 1 {
		return cred, ErrBadVerifier
	}
	dec := base64.StdEncoding.DecodeString
	s, err1 := dec(salt)
	sk, err2 := dec(stored)
	vk, err3 := dec(server)
	if err1 != nil || err2 != nil || err3 != nil {
		return cred, ErrBadVerifier
	}
	cred.KeyFactors = scram.KeyFactors{Salt: string(s), Iters: n}
	cred.StoredKey, cred.ServerKey = sk, vk
	return cred, nil
}

// Conversation is the server side of one SCRAM-SHA-256 exchange.
type Conversation struct{ conv *scram.ServerConversation }

// NewConversation starts an exchange that checks the client's proof
// against cred. For a user that does not exist, pass Decoy(): the
// exchange then runs the same way and fails at the proof, so a client
// cannot tell unknown names from wrong passwords.
func NewConversation(cred scram.StoredCredentials) (*Conversation, error) {
	// PostgreSQL clients send an empty SCRAM user name (the user is in the
	// startup message), so the lookup ignores the name it is given.
	srv, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return cred, nil })
	if err != nil {
		return nil, err
	}
	return &Conversation{conv: srv.NewConversation()}, nil
}

// Step takes the client's next message and returns the server's reply.
// An error means the authentication failed.
func (c *Conversation) Step(clientMessage string) (string, error) {
	return c.conv.Step(clientMessage)
}

// Valid reports whether the exchange ended with a correct proof.
func (c *Conversation) Valid() bool { return c.conv.Done() && c.conv.Valid() }

// Decoy returns credentials for user, who does not exist, that no
// password matches. The salt a client is sent is derived from secret and
// the user name, so it is the same at every attempt, as a real user's is:
// a random salt per attempt would tell an unknown name from a wrong
// password. secret must be persistent and unknown to clients
// (Engine.AuthSecret).
func Decoy(secret []byte, user string) scram.StoredCredentials {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("dpsql decoy salt\x00" + user))
	salt := mac.Sum(nil)[:16]
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: Iterations}, StoredKey: key, ServerKey: key}
}

// CheckPassword reports whether password matches cred (a verifier's,
// ParseVerifier, or a Decoy, which nothing matches), for a password sent
// whole, as the web console's log-in sends it over TLS: the stored key is
// derived from the password with cred's salt and iteration count and
// compared in constant time, so a known and an unknown user take the same
// time.
func CheckPassword(cred scram.StoredCredentials, password string) bool {
	c, err := scram.SHA256.NewClient("", password, "")
	if err != nil {
		c, _ = scram.SHA256.NewClientUnprepped("", password, "")
	}
	got, err := c.GetStoredCredentialsWithError(cred.KeyFactors)
	if err != nil {
		return false
	}
	return hmac.Equal(got.StoredKey, cred.StoredKey)
}
