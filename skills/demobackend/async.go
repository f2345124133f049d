package demobackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// Pending returns the accepted async tasks not yet reported.
func (b *Backend) Pending() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, len(b.pending))
	for i, t := range b.pending {
		ids[i] = t.TaskID
	}
	return ids
}

// CompleteAsync approves every pending VPN request now and POSTs an
// skills.AsyncCallback for each to its callback URL, signed with the
// identity key. A task whose callback fails stays pending for the next
// call. It returns the failures joined.
func (b *Backend) CompleteAsync(ctx context.Context) error {
	b.mu.Lock()
	tasks := b.pending
	b.pending = nil
	b.mu.Unlock()
	var errs []error
	var failed []pendingTask
	for _, t := range tasks {
		if err := b.report(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("demobackend: callback for %s: %w", t.TaskID, err))
			failed = append(failed, t)
		}
	}
	if len(failed) > 0 {
		b.mu.Lock()
		b.pending = append(failed, b.pending...)
		b.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (b *Backend) report(ctx context.Context, t pendingTask) error {
	now := b.opts.Now()
	until := now.AddDate(0, 0, t.Days).Format("2006-01-02")
	result, _ := json.Marshal(map[string]any{"user_id": t.User.ID, "days": t.Days, "valid_until": until})
	cb := skills.AsyncCallback{TaskID: t.TaskID, Status: skills.AsyncSucceeded, Result: result,
		Message: fmt.Sprintf("%s 的 VPN 权限申请 %s 已批准，有效期 %d 天（至 %s）。", t.User.Name, t.TaskID, t.Days, until)}
	req, err := skills.NewCallbackRequest(ctx, t.CallbackURL, cb, b.key(systemIT), now)
	if err != nil {
		return err
	}
	resp, err := b.opts.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	// 409/410: Hermes already has this result or gave up waiting; sending
	// again would not help.
	if resp.StatusCode >= 300 && !slices.Contains([]int{http.StatusConflict, http.StatusGone}, resp.StatusCode) {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// scheduleAutoComplete reports pending work after Options.AutoCompleteAfter,
// when set (the demo); failures are retried by the next request's timer.
func (b *Backend) scheduleAutoComplete() {
	if d := b.opts.AutoCompleteAfter; d > 0 {
		time.AfterFunc(d, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = b.CompleteAsync(ctx) // the demo shows the result, or its absence
		})
	}
}
