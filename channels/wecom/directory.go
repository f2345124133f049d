package wecom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/silenceper/wechat/v2/work/addresslist"

	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
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

	resp, err := untilDone(ctx, func() (*addresslist.UserGetResponse, error) { // silenceper's API takes no context
		resp, err := d.client.UserGet(userID)
		if err != nil && refreshesToken(err) {
			if derr := a.tokens.invalidate(); derr != nil {
				return nil, derr
			}
			resp, err = d.client.UserGet(userID)
		}
		return resp, err
	})
	var done ctxDoneError
	if errors.As(err, &done) {
		return nil, fmt.Errorf("wecom: app %q: departments of %q: %w", a.name, userID, done.err)
	}
	if err != nil {
		return nil, fmt.Errorf("wecom: app %q: departments of %q: %s", a.name, userID, wxbiz.Redact(err.Error(), a.secret))
	}
	depts := make([]string, 0, len(resp.Department))
	for _, id := range resp.Department {
		depts = append(depts, strconv.Itoa(id))
	}
	d.mu.Lock()
	d.entries[userID] = dirEntry{depts: depts, expires: now.Add(departmentsTTL)}
	d.mu.Unlock()
	return depts, nil
}
