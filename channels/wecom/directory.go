package wecom

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/silenceper/wechat/v2/work/addresslist"
)

// departmentsTTL is how long a user's departments are reused: skill access
// rules by department follow a move within this time.
const departmentsTTL = 10 * time.Minute

// directory caches users' departments for one app.
type directory struct {
	client  *addresslist.Client
	mu      sync.Mutex
	entries map[string]dirEntry
}

type dirEntry struct {
	depts   []string
	expires time.Time
}

func (a *App) departments(ctx context.Context, userID string) ([]string, error) {
	d := a.dir
	now := a.now()
	d.mu.Lock()
	if e, ok := d.entries[userID]; ok && now.Before(e.expires) {
		d.mu.Unlock()
		return e.depts, nil
	}
	d.mu.Unlock()

	type outcome struct {
		resp *addresslist.UserGetResponse
		err  error
	}
	done := make(chan outcome, 1)
	go func() { // silenceper's API takes no context
		resp, err := d.client.UserGet(userID)
		if err != nil && refreshesToken(err) {
			if derr := a.tokens.invalidate(); derr != nil {
				done <- outcome{nil, derr}
				return
			}
			resp, err = d.client.UserGet(userID)
		}
		done <- outcome{resp, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("wecom: app %q: departments of %q: %w", a.name, userID, ctx.Err())
	}
	if o.err != nil {
		return nil, fmt.Errorf("wecom: app %q: departments of %q: %s", a.name, userID, redact(o.err.Error(), a.secret))
	}
	depts := make([]string, 0, len(o.resp.Department))
	for _, id := range o.resp.Department {
		depts = append(depts, strconv.Itoa(id))
	}
	d.mu.Lock()
	d.entries[userID] = dirEntry{depts: depts, expires: now.Add(departmentsTTL)}
	d.mu.Unlock()
	return depts, nil
}
