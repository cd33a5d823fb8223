// Command genclient drives the Go client that oapi-codegen generates, untouched, from the served OpenAPI
// document (TestGeneratedClient writes client.gen.go beside it): a create, a filtered list walked with a
// cursor, an update and an archive of companies. It prints what it saw as one JSON object.
//
// Usage: genclient BASE_URL API_KEY
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
)

func main() {
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "genclient:", err)
		os.Exit(1)
	}
}

func run(base, key string) error {
	ctx := context.Background()
	bearer := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	}
	c, err := NewClientWithResponses(base, WithRequestEditorFn(bearer))
	if err != nil {
		return err
	}
	out := map[string]any{}
	var ids []string
	for i := range 7 {
		size, revenue := 10*(i+1), 1250000.5+float64(i)
		industry := CreateCompaniesJSONBodyIndustry("software")
		idem := fmt.Sprintf("genclient-create-%d", i)
		res, err := c.CreateCompaniesWithResponse(ctx, &CreateCompaniesParams{IdempotencyKey: &idem},
			CreateCompaniesJSONRequestBody{Name: fmt.Sprintf("Genclient %d", i), Industry: &industry, EmployeeCount: &size, AnnualRevenue: &revenue})
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		if res.JSON201 == nil || res.JSON201.Data.Id == nil {
			return fmt.Errorf("create: %d %s", res.StatusCode(), res.Body)
		}
		ids = append(ids, res.JSON201.Data.Id.String())
		out["location"] = res.HTTPResponse.Header.Get("Location")
	}
	out["created"] = ids

	filter := `[{"field":"name","op":"starts_with","value":"Genclient"},{"field":"employee_count","op":"gte","value":20}]`
	cursor, size, pages := "start", 3, 0
	var walked []string
	for {
		res, err := c.ListCompaniesWithResponse(ctx, &ListCompaniesParams{Filter: &filter, Cursor: &cursor, PageSize: &size})
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if res.JSON200 == nil {
			return fmt.Errorf("list: %d %s", res.StatusCode(), res.Body)
		}
		pages++
		for _, r := range res.JSON200.Data {
			walked = append(walked, r.Id.String())
		}
		if res.JSON200.Meta.NextCursor == nil {
			break
		}
		cursor = *res.JSON200.Meta.NextCursor
	}
	out["walked"], out["pages"] = walked, pages

	employees := 4321
	upd, err := c.UpdateCompaniesWithResponse(ctx, uuidOf(ids[0]), &UpdateCompaniesParams{}, CompaniesUpdate{EmployeeCount: &employees})
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if upd.JSON200 == nil || upd.JSON200.Data.EmployeeCount == nil {
		return fmt.Errorf("update: %d %s", upd.StatusCode(), upd.Body)
	}
	out["updated_employee_count"] = *upd.JSON200.Data.EmployeeCount

	reason := "Merged into another account"
	arch, err := c.ArchiveCompaniesWithResponse(ctx, uuidOf(ids[1]), &ArchiveCompaniesParams{}, ArchiveRequest{Reason: &reason})
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if arch.JSON200 == nil || arch.JSON200.Data.Archived == nil {
		return fmt.Errorf("archive: %d %s", arch.StatusCode(), arch.Body)
	}
	out["archived"], out["archive_reason"] = *arch.JSON200.Data.Archived, arch.JSON200.Data.ArchiveReason

	again, err := c.ArchiveCompaniesWithResponse(ctx, uuidOf(ids[1]), &ArchiveCompaniesParams{}, ArchiveRequest{})
	if err != nil {
		return fmt.Errorf("archive again: %w", err)
	}
	if again.JSON409 == nil {
		return fmt.Errorf("archive again: %d %s", again.StatusCode(), again.Body)
	}
	out["archive_again_code"] = again.JSON409.Error.Code
	return json.NewEncoder(os.Stdout).Encode(out)
}

func uuidOf(s string) Id {
	var id Id
	if err := id.UnmarshalText([]byte(s)); err != nil {
		panic(err)
	}
	return id
}
