package agent

import (
	"errors"
	"fmt"
)

// Sentinels of the stop reasons, one each, in Result.Cause. Callers branch
// with errors.Is; the wrapped text says what exactly happened.
var (
	ErrMaxSteps             = errors.New("agent: step budget used up")
	ErrTimeout              = errors.New("agent: wall-clock budget used up")
	ErrRepeatedCall         = errors.New("agent: same call repeated beyond the limit")
	ErrIdle                 = errors.New("agent: no successful tool call for too many rounds")
	ErrNeedsInput           = errors.New("agent: a skill needs more information from the user")
	ErrAwaitingConfirmation = errors.New("agent: a skill waits for the user's confirmation")
	ErrPlanRefused          = errors.New("agent: the request could not be turned into a plan")
	ErrModel                = errors.New("agent: model call failed")
	ErrCanceled             = errors.New("agent: run canceled")

	// ErrFatalTool is both the sentinel of StopFatalTool and what a tool
	// wraps to say "stop the run, retrying cannot help" without depending
	// on the skills package's errors.
	ErrFatalTool = errors.New("fatal tool error")

	// ErrEmptyResponse is wrapped when the model answers without any choice.
	ErrEmptyResponse = errors.New("model returned no choices")
)

// stopSentinels maps each stop reason to its sentinel; StopFinished has
// none since it is not a failure.
var stopSentinels = map[string]error{
	StopMaxSteps:             ErrMaxSteps,
	StopTimeout:              ErrTimeout,
	StopRepeated:             ErrRepeatedCall,
	StopIdle:                 ErrIdle,
	StopFatalTool:            ErrFatalTool,
	StopNeedsInput:           ErrNeedsInput,
	StopAwaitingConfirmation: ErrAwaitingConfirmation,
	StopPlanRefused:          ErrPlanRefused,
	StopError:                ErrModel,
	StopCanceled:             ErrCanceled,
}

// StopSentinel returns the sentinel error of a stop reason, nil for
// StopFinished and unknown reasons.
func StopSentinel(reason string) error { return stopSentinels[reason] }

// stopCause wraps detail in the reason's sentinel so that both
// errors.Is(cause, sentinel) and errors.Is(cause, detail) hold.
func stopCause(reason string, detail error) error {
	s := stopSentinels[reason]
	switch {
	case s == nil:
		return detail
	case detail == nil:
		return s
	case errors.Is(detail, s):
		return detail
	default:
		return fmt.Errorf("%w: %w", s, detail)
	}
}
