package console

// Texts exposes the interface text of lang to the tests.
func Texts(lang string) map[string]string { return texts[lang] }
