package skills_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/skills"
)

func TestImportOpenAPI_Petstore(t *testing.T) {
	spec, err := os.ReadFile("testdata/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := skills.ImportOpenAPI(spec)
	if err != nil {
		t.Fatalf("ImportOpenAPI: %v", err)
	}
	byName := map[string]*skills.Skill{}
	var names []string
	for _, g := range gen {
		s, err := skills.Parse(g.Dir+"/SKILL.md", g.SKILLMD)
		if err != nil {
			t.Fatalf("%s does not parse: %v\n%s", g.Name, err, g.SKILLMD)
		}
		names = append(names, g.Name)
		byName[g.Name] = s
	}
	if got, want := strings.Join(names, ","), "add_photo_note,create_pet,delete_pets_pet_id,get_pet_by_id,list_pets"; got != want {
		t.Errorf("names = %s, want %s", got, want)
	}

	list := byName["list_pets"]
	if list.Method != "GET" || list.Endpoint != "https://api.pets.example.com/v1/pets" ||
		list.Description != "List pets\nPets in the store, newest first." || list.Spec().Confirm {
		t.Errorf("list_pets = %+v", list)
	}
	props := properties(t, list)
	if props["limit"]["maximum"] != 100.0 || props["limit"]["description"] == nil || props["tag"] == nil || props["X-Trace"] != nil {
		t.Errorf("list_pets parameters = %v, want limit ($ref) and tag, no header", props)
	}

	create := byName["create_pet"]
	props = properties(t, create)
	if create.Method != "POST" || !create.Spec().Confirm || strings.Join(create.QueryParams, ",") != "dryRun" {
		t.Errorf("create_pet = %+v", create)
	}
	if props["id"] != nil || props["name"]["examples"] == nil || props["owner"]["properties"] == nil {
		t.Errorf("create_pet body = %v, want name (example), owner ($ref), no readOnly id", props)
	}
	if !strings.Contains(string(create.Parameters), `"required":["name"]`) || !strings.Contains(string(create.Parameters), `"type":["string","null"]`) ||
		strings.Count(string(create.Parameters), `"friends"`) != 1 {
		t.Errorf("create_pet parameters = %s, want required name, nullable tag, the recursive owner cut once", create.Parameters)
	}

	get := byName["get_pet_by_id"]
	if get.Endpoint != "https://api.pets.example.com/v1/pets/{petId}" || !strings.Contains(string(get.Parameters), `"required":["petId"]`) {
		t.Errorf("get_pet_by_id = %s %s", get.Endpoint, get.Parameters)
	}
	if note := byName["add_photo_note"]; note.ContentType != skills.ContentForm {
		t.Errorf("add_photo_note content type = %q", note.ContentType)
	}
	if del := byName["delete_pets_pet_id"]; del.Method != "DELETE" || !del.Spec().Confirm {
		t.Errorf("delete without operationId = %+v", del)
	}
}

func properties(t *testing.T, s *skills.Skill) map[string]map[string]any {
	t.Helper()
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(s.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	return schema.Properties
}

func TestImportOpenAPI_Errors(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"NotYAML", "{", "not JSON or YAML"},
		{"Swagger2", `{"swagger":"2.0","paths":{}}`, "not an OpenAPI 3 document"},
		{"NoOperations", `{"openapi":"3.1.0","paths":{}}`, "no operations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := skills.ImportOpenAPI([]byte(tc.spec)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
