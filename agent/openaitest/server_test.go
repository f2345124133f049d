package openaitest_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
)

func client(s *openaitest.Server, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = s.URL()
	return openai.NewClientWithConfig(cfg)
}

func userRequest(text string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: text}}}
}

func TestServer_ScriptThenRepeatLast(t *testing.T) {
	s := openaitest.NewServer(t)
	s.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("a", `{"x":1}`), openaitest.ToolCall("b", `{}`)}},
		openaitest.Reply{Content: "done"},
	)
	c := client(s, "")
	first, err := c.CreateChatCompletion(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	calls := first.Choices[0].Message.ToolCalls
	if first.Choices[0].FinishReason != openai.FinishReasonToolCalls || len(calls) != 2 ||
		calls[0].ID != "call_1" || calls[1].ID != "call_2" || calls[0].Function.Arguments != `{"x":1}` {
		t.Errorf("first = %+v", first.Choices[0])
	}
	if first.Usage.TotalTokens == 0 || first.Object != "chat.completion" || first.Model != "m" {
		t.Errorf("envelope = %+v", first)
	}
	for range 2 { // the last reply repeats
		resp, err := c.CreateChatCompletion(context.Background(), userRequest("again"))
		if err != nil || resp.Choices[0].Message.Content != "done" || resp.Choices[0].FinishReason != openai.FinishReasonStop {
			t.Errorf("resp = %+v, %v; want the last reply again", resp, err)
		}
	}
	if got := s.Requests(); len(got) != 3 || got[1].Messages[0].Content != "again" {
		t.Errorf("requests = %+v", got)
	}
}

func TestServer_Unscripted(t *testing.T) {
	s := openaitest.NewServer(t)
	resp, err := client(s, "").CreateChatCompletion(context.Background(), userRequest("hi"))
	if err != nil || resp.Choices[0].Message.Content != openaitest.DefaultContent {
		t.Errorf("resp = %+v, %v", resp, err)
	}
}

func TestServer_Errors(t *testing.T) {
	orphan := userRequest("hi")
	orphan.Messages = append(orphan.Messages, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_9", Content: "x"})
	unanswered := userRequest("hi")
	unanswered.Messages = append(unanswered.Messages,
		openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "a"}}}},
		openai.ChatCompletionMessage{Role: "user", Content: "and?"})
	noModel := userRequest("hi")
	noModel.Model = ""

	for _, tc := range []struct {
		name   string
		key    string
		reply  openaitest.Reply
		req    openai.ChatCompletionRequest
		status int
		want   string
	}{
		{name: "WrongKey", key: "sk-wrong", req: userRequest("hi"), status: 401, want: "Incorrect API key"},
		{name: "Status", key: "sk-test", reply: openaitest.Reply{Status: 429, Content: "slow down"}, req: userRequest("hi"), status: 429, want: "slow down"},
		{name: "HookError", key: "sk-test", reply: openaitest.Reply{Hook: func(context.Context) error { return errors.New("hook says no") }},
			req: userRequest("hi"), status: 500, want: "hook says no"},
		{name: "OrphanToolMessage", key: "sk-test", req: orphan, status: 400, want: "role 'tool'"},
		{name: "UnansweredToolCall", key: "sk-test", req: unanswered, status: 400, want: "must be followed by tool messages"},
		{name: "NoModel", key: "sk-test", req: noModel, status: 400, want: "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openaitest.NewServer(t)
			s.SetAPIKey("sk-test")
			s.Script(tc.reply)
			_, err := client(s, tc.key).CreateChatCompletion(context.Background(), tc.req)
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != tc.status || !strings.Contains(apiErr.Message, tc.want) {
				t.Errorf("err = %v, want HTTP %d mentioning %q", err, tc.status, tc.want)
			}
		})
	}
}

func TestServer_SetHandlerConcurrent(t *testing.T) {
	s := openaitest.NewServer(t)
	s.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Content: "echo " + req.Messages[0].Content}
	})
	c := client(s, "")
	var wg sync.WaitGroup
	for _, text := range []string{"a", "b", "c", "d"} {
		wg.Go(func() {
			resp, err := c.CreateChatCompletion(context.Background(), userRequest(text))
			if err != nil || resp.Choices[0].Message.Content != "echo "+text {
				t.Errorf("%s: resp = %+v, %v", text, resp, err)
			}
		})
	}
	wg.Wait()
	if n := len(s.Requests()); n != 4 {
		t.Errorf("requests = %d, want 4", n)
	}
}

func TestServer_HookBlocksUntilReleased(t *testing.T) {
	s := openaitest.NewServer(t)
	entered, release := make(chan struct{}), make(chan struct{})
	s.Script(openaitest.Reply{Content: "late", Hook: func(ctx context.Context) error {
		close(entered)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	done := make(chan string)
	go func() {
		resp, err := client(s, "").CreateChatCompletion(context.Background(), userRequest("hi"))
		if err != nil {
			done <- err.Error()
			return
		}
		done <- resp.Choices[0].Message.Content
	}()
	<-entered
	if n := len(s.Requests()); n != 1 {
		t.Errorf("requests while blocked = %d, want 1", n)
	}
	close(release)
	if got := <-done; got != "late" {
		t.Errorf("answer = %q, want late", got)
	}
}

func TestServer_Stream(t *testing.T) {
	s := openaitest.NewServer(t)
	s.Script(openaitest.Reply{Content: "你好呀", ToolCalls: []openai.ToolCall{
		openaitest.ToolCall("a", `{"x":1}`), openaitest.ToolCall("b", `{"y":"长文本"}`)}})
	req := userRequest("hi")
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := client(s, "").CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var content strings.Builder
	args := map[int]string{}
	names := map[int]string{}
	var finish openai.FinishReason
	var usage *openai.Usage
	chunks := 0
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			content.WriteString(c.Delta.Content)
			for _, tc := range c.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("tool call delta without index: %+v", tc)
				}
				names[*tc.Index] += tc.Function.Name
				args[*tc.Index] += tc.Function.Arguments
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if content.String() != "你好呀" || names[0] != "a" || names[1] != "b" || args[0] != `{"x":1}` || args[1] != `{"y":"长文本"}` {
		t.Errorf("assembled content %q, calls %v %v", content.String(), names, args)
	}
	if finish != openai.FinishReasonToolCalls || usage == nil || usage.TotalTokens == 0 || chunks < 6 {
		t.Errorf("finish %q, usage %+v, %d chunks", finish, usage, chunks)
	}
	if got := s.Requests(); len(got) != 1 || !got[0].Stream {
		t.Errorf("requests = %+v, want one streamed", got)
	}
}
