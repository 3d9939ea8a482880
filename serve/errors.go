package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/cflow-dev/cflow/generate"
)

// apiError is an error in the OpenAI API's JSON shape, with its HTTP
// status: {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// badParam is a 400 naming the request field.
func badParam(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: strp(param),
		Message: fmt.Sprintf("%s: ", param) + fmt.Sprintf(format, args...)}
}

// badRequest is a 400 that no single field is to blame for.
func badRequest(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: strp(code), Message: fmt.Sprintf(format, args...)}
}

// errQueueFull is a 429: every slot busy and the queue full.
func errQueueFull(queue int) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: strp("queue_full"),
		Message: fmt.Sprintf("the server is busy: every slot is generating and %d requests are waiting; retry later", queue)}
}

// errDraining is a 503: the server is shutting down.
var errDraining = &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: strp("shutting_down"),
	Message: "the server is shutting down and takes no new requests"}

// asAPIError maps errors from generate and the engine to API errors:
// parameter errors and too-long prompts are the client's (400), anything
// else ours (500).
func asAPIError(err error) *apiError {
	var ae *apiError
	var pe *generate.ParamError
	var pl *generate.PromptTooLongError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &pe):
		return badParam(pe.Param, "%v: %s", jsonValue(pe.Value), pe.Reason)
	case errors.As(err, &pl):
		return badRequest("context_length_exceeded", "%s", pl.Error())
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
}

// jsonValue prints a rejected value as the client sent it.
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// writeError sends e as the response.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Status, struct {
		Error *apiError `json:"error"`
	}{e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
