package audit

// Settings is the extension's config, for the tests of package audit_test.
type Settings = settings
