package copycerts

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// KeySize is the length in bytes of a certificate key: an AES-256 key. It
// travels as 2*KeySize hexadecimal characters.
const KeySize = 32

// ErrDecrypt is returned (wrapped) when data does not decrypt with the
// given key: the key is the wrong one or the data was changed.
var ErrDecrypt = errors.New("the data does not decrypt with this certificate key (wrong key, or damaged data)")

// NewKey returns a new random certificate key, hex-encoded.
func NewKey() (string, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a certificate key: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ParseKey decodes a hex-encoded certificate key. Its errors never show the
// key.
func ParseKey(hexKey string) ([]byte, error) {
	b, err := hex.DecodeString(hexKey)
	if err != nil {
		return nil, errors.New("the certificate key is not hexadecimal")
	}
	if len(b) != KeySize {
		return nil, fmt.Errorf("the certificate key is %d bytes long; it must be %d bytes (%d hexadecimal characters)", len(b), KeySize, 2*KeySize)
	}
	return b, nil
}

// Encrypt seals data with key using AES-GCM; the result is the random
// nonce followed by the ciphertext and its tag.
func Encrypt(data, key []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("generating a nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, data, nil), nil
}

// Decrypt opens what Encrypt sealed with the same key. A wrong key or
// altered data gives an error wrapping ErrDecrypt.
func Decrypt(sealed, key []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(sealed) < n+aead.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes is too short to hold a nonce and a tag", ErrDecrypt, len(sealed))
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, ErrDecrypt
	}
	return plain, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("the certificate key is %d bytes long; it must be %d bytes", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("preparing AES: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("preparing AES-GCM: %w", err)
	}
	return aead, nil
}
