"""The differential test: the same requests to a real API server and to both emulators, answers compared."""
