package dingtalktest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// Tap is a tap on a card's button as DingTalk calls it back over Stream
// mode (dingtalk-stream-sdk-go card/model.go CardRequest).
type Tap struct {
	OutTrackID string
	UserID     string // the tapper's staffId
	CorpID     string
	Action     string // the button's "action" param, as the template's 回传请求 sends it
	ActionID   string // the component's action id; default "hermes_button"
}

// JSON is the tap's callback data on the card at spaceType.spaceID.
func (t Tap) JSON(spaceType, spaceID string) []byte {
	actionID := t.ActionID
	if actionID == "" {
		actionID = "hermes_button"
	}
	content, _ := json.Marshal(map[string]any{"cardPrivateData": map[string]any{
		"actionIds": []string{actionID}, "params": map[string]string{"action": t.Action},
	}})
	b, _ := json.Marshal(map[string]any{
		"type": "actionCallback", "outTrackId": t.OutTrackID, "userId": t.UserID, "userIdType": 1,
		"corpId": t.CorpID, "spaceType": spaceType, "spaceId": spaceID, "extension": "{}",
		"content": string(content),
	})
	return b
}

// PushTap pushes tap as DingTalk does: only for a card this app created
// with callbackType STREAM, only on a connection that subscribed
// CardTopic (conn: 1-based, in order of connecting; 0: the newest live
// one that subscribed). It returns the frame's messageId.
func (s *Server) PushTap(ctx context.Context, tap Tap, conn int) (string, error) {
	s.mu.Lock()
	created, ok := s.createdLocked(tap.OutTrackID)
	s.mu.Unlock()
	if !ok || created.CallbackType != "STREAM" {
		return "", fmt.Errorf("dingtalktest: card %q was not created with callbackType STREAM: DingTalk calls nothing back", tap.OutTrackID)
	}
	spaceType, spaceID := "IM_ROBOT", created.OpenSpaceID
	if i := len("dtv1.card//"); len(spaceID) > i {
		spaceID = spaceID[i:]
		for j := range spaceID {
			if spaceID[j] == '.' {
				spaceType, spaceID = spaceID[:j], spaceID[j+1:]
				break
			}
		}
	}
	g := s.stream
	g.mu.Lock()
	g.nextID++
	id := fmt.Sprintf("frame-%d", g.nextID)
	data := tap.JSON(spaceType, spaceID)
	g.pending[id] = pushed{topic: CardTopic, data: data}
	g.frames[id] = pushed{topic: CardTopic, data: data}
	g.mu.Unlock()
	return id, s.pushTo(ctx, conn, CardTopic, id, data)
}

// PushAgain pushes frame id (pushed before, acked or not) again on conn,
// as DingTalk does when an ack is lost on the way.
func (s *Server) PushAgain(ctx context.Context, id string, conn int) error {
	g := s.stream
	g.mu.Lock()
	f, ok := g.frames[id]
	g.mu.Unlock()
	if !ok {
		return fmt.Errorf("dingtalktest: no frame %q", id)
	}
	return s.pushTo(ctx, conn, f.topic, id, f.data)
}

// pushTo writes a CALLBACK frame on connection conn (0: the newest live
// one that subscribed topic).
func (s *Server) pushTo(ctx context.Context, conn int, topic, id string, data []byte) error {
	g := s.stream
	if conn == 0 {
		return g.push(ctx, "CALLBACK", topic, id, string(data))
	}
	g.mu.Lock()
	var c *streamConn
	if conn <= len(g.conns) {
		c = g.conns[conn-1]
	}
	g.mu.Unlock()
	if c == nil || c.ctx.Err() != nil {
		return fmt.Errorf("dingtalktest: connection %d is not live", conn)
	}
	for _, t := range c.topics {
		if t == topic {
			return g.pushOn(ctx, c, "CALLBACK", topic, id, string(data))
		}
	}
	return fmt.Errorf("dingtalktest: connection %d did not subscribe %s", conn, topic)
}

// CardState is what a card shows everyone: its public variables after
// the create, the answers to taps and the updates, and when it last
// changed.
type CardState struct {
	Params map[string]string
	At     time.Time
	// Changes counts the taps' answers and updates that changed it.
	Changes int
}

// Card is the card outTrackID as it looks now; ok is false if it was never
// created.
func (s *Server) Card(outTrackID string) (CardState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st CardState
	found := false
	for _, c := range s.cards {
		if c.OutTrackID != outTrackID || c.Op == "stream" {
			continue
		}
		if c.Op == "create" {
			found, st.Params = true, maps.Clone(c.Params)
		} else if found {
			maps.Copy(st.Params, c.Params) // updateCardDataByKey
			st.Changes++
		}
		st.At = c.At
	}
	return st, found
}

// applyAnswer records a tap's ack data that redraws the card (its
// response.cardData), as DingTalk applies it; s.mu is not held.
func (s *Server) applyAnswer(frame pushed, ackData string) {
	var tap struct {
		OutTrackID string `json:"outTrackId"`
	}
	var ans struct {
		Response struct {
			CardData struct {
				CardParamMap map[string]string `json:"cardParamMap"`
			} `json:"cardData"`
		} `json:"response"`
	}
	if json.Unmarshal(frame.data, &tap) != nil || json.Unmarshal([]byte(ackData), &ans) != nil ||
		len(ans.Response.CardData.CardParamMap) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cards = append(s.cards, CardCall{Op: "answer", OutTrackID: tap.OutTrackID, Params: ans.Response.CardData.CardParamMap, At: time.Now()})
	s.recordLocked()
}
