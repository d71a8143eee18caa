package web

import "github.com/metnos/gateway/internal/httpjson"

// The answers' JSON, as the API writes them (package httpjson).
var (
	writeJSON  = httpjson.Write
	writeError = httpjson.Error
	cleanMsg   = httpjson.CleanMsg
)
