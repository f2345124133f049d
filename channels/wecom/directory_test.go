package wecom_test

import (
	"context"
	"slices"
	"testing"
)

func TestDepartments(t *testing.T) {
	f := newSendFixture(t, fixtureOpts{})
	ctx := context.Background()
	f.srv.SetDepartments("zhangsan", 2, 7)

	got, err := f.ch.Departments(ctx, "app-hr", "zhangsan")
	if err != nil || !slices.Equal(got, []string{"2", "7"}) {
		t.Fatalf("Departments = %v, %v; want [2 7]", got, err)
	}
	// Cached: a second lookup asks WeCom nothing.
	if _, err := f.ch.Departments(ctx, "app-hr", "zhangsan"); err != nil || f.srv.UserGets() != 1 {
		t.Fatalf("second lookup: %v, user/get calls %d, want 1", err, f.srv.UserGets())
	}
	// A token WeCom revoked is refreshed once.
	f.srv.InvalidateTokens()
	f.srv.SetDepartments("lisi", 3)
	if got, err := f.ch.Departments(ctx, "app-hr", "lisi"); err != nil || !slices.Equal(got, []string{"3"}) {
		t.Fatalf("after token revocation: %v, %v", got, err)
	}
	if _, err := f.ch.Departments(ctx, "app-hr", "nobody"); err == nil {
		t.Fatal("unknown user: no error")
	}
	if _, err := f.ch.Departments(ctx, "no-such-app", "zhangsan"); err == nil {
		t.Fatal("unknown account: no error")
	}
}
