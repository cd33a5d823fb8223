package httpapi

// The handlers of this area's admin routes are registered here with handle, in an init function
// (docs/issue-24.md).
