package console

// Texts exposes the interface text of lang to the tests.
func Texts(lang string) map[string]string { return texts[lang] }

// SetVerifier replaces c's password check, so that tests can count the
// checks.
func SetVerifier(c *Console, verify func(hash, password []byte) error) { c.verify = verify }
