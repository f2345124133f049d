package dingtalk

import (
	"context"
	"fmt"
	"strconv"
	"sync"
)

// memberPermission is what user/get needs, as the console names it.
const memberPermission = "通讯录个人信息读权限 / 成员信息读权限 (qyapi_get_member)"

// directory caches users' departments for one robot, DefaultDepartmentsTTL
// long: skill access rules by department follow a move within that time.
type directory struct {
	mu      sync.Mutex
	entries map[string]dirEntry
}

// maxDirEntries bounds the cache of one robot.
const maxDirEntries = 10000

type dirEntry struct {
	depts   []string
	expires int64 // Unix ms
}

// departments looks userID's department ids up through the legacy user
// API (topapi/v2/user/get → dept_id_list). The gateway calls it from the
// worker, never in the ack path.
//
// Errors: the lookup failed (a missing permission is also logged, naming
// the permission to grant).
func (r *robot) departments(ctx context.Context, userID string) ([]string, error) {
	now := r.now()
	d := &r.dir
	d.mu.Lock()
	e, ok := d.entries[userID]
	d.mu.Unlock()
	if ok && now.UnixMilli() < e.expires {
		return e.depts, nil
	}
	var ans struct {
		Result struct {
			DeptIDList []int64 `json:"dept_id_list"`
		} `json:"result"`
	}
	err := r.api.callOAPI(ctx, "/topapi/v2/user/get", map[string]string{"userid": userID, "language": "zh_CN"}, &ans)
	if err != nil {
		r.api.permissionHint(err, memberPermission)
		return nil, fmt.Errorf("dingtalk: robot %q: departments of %q: %w", r.cfg.Name, userID, err)
	}
	depts := make([]string, 0, len(ans.Result.DeptIDList))
	for _, id := range ans.Result.DeptIDList {
		depts = append(depts, strconv.FormatInt(id, 10))
	}
	d.mu.Lock()
	if len(d.entries) >= maxDirEntries {
		d.entries = map[string]dirEntry{} // start afresh: a lookup more, never a wrong answer
	}
	d.entries[userID] = dirEntry{depts: depts, expires: now.Add(DefaultDepartmentsTTL).UnixMilli()}
	d.mu.Unlock()
	return depts, nil
}
