package waitroom

// PageText is the built-in page's words in lang, for the tests that read the page as a visitor.
func PageText(lang string) Text { return texts[lang] }
