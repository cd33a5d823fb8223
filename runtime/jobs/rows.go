package jobs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/engine/strictjson"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
)

// MaxLine is the longest NDJSON line (one record) an import reads, as the API's largest body.
const MaxLine = 1 << 20

// source reads an import's rows, one record body at a time, numbered from 1.
type source interface {
	// next returns the next row's item (its Problem set when the row itself is malformed), or io.EOF.
	next() (records.BatchItem, error)
	// offset is how many bytes of the upload the rows returned so far took.
	offset() int64
}

// newSource reads the upload of j (every part, in order) in j's format for c.
func (s *Service) newSource(ctx context.Context, j *Job, c *records.Collection) (source, error) {
	in := s.data(ctx, j.Workspace, j.ID, 1, MaxParts)
	conv := &converter{c: c, spec: j.Spec}
	if j.Spec.Format == "ndjson" {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), MaxLine)
		src := &ndjsonSource{sc: sc, conv: conv}
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			n, tok, err := bufio.ScanLines(data, atEOF)
			src.read += int64(n)
			return n, tok, err
		})
		return src, nil
	}
	cr := csv.NewReader(in)
	cr.FieldsPerRecord = -1 // each row's count is checked against the header, as its own problem
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, apierr.New(apierr.InvalidRequest, "The upload's first line must be a CSV header row: "+csvProblem(err))
	}
	header = slices.Clone(header)
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff") // a byte-order mark, as spreadsheets write
	}
	keys := make([]string, len(header))
	refs := make([]*refColumn, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		key := strings.TrimSpace(h)
		if m, ok := j.Spec.Mapping[key]; ok {
			key = m
		}
		if ref, unique, isRef := strings.Cut(key, "."); isRef {
			rc, err := refColumnOf(c, ref, unique)
			if err != nil {
				return nil, err
			}
			refs[i] = rc
			key = ref
		}
		if key != "" && seen[key] {
			return nil, apierr.New(apierr.InvalidRequest, fmt.Sprintf("The header maps two columns to %q.", key))
		}
		seen[key] = true
		keys[i] = key
	}
	return &csvSource{r: cr, keys: keys, refs: refs, conv: conv}, nil
}

// refColumn is a CSV column that names its records' association target by one of the target's unique
// keys (a mapping to "<reference field>.<unique key>": company_id.domain, cf__partner.cf__code): the
// reference field it sets, and what its cells are looked up by.
type refColumn struct {
	field, target, unique string
}

// refColumnOf reads a mapping to ref.unique on c: ref must be a reference field (declared, or a custom
// field of type reference) and unique a unique key of its target (checked when the rows are read).
func refColumnOf(c *records.Collection, ref, unique string) (*refColumn, error) {
	target := ""
	if f, ok := c.Resource.Field(ref); ok && f.Type == model.Reference {
		target = f.Target
	} else if name, custom := strings.CutPrefix(ref, "cf__"); custom {
		if d, ok := c.Fields.ByKey(name); ok && d.Type == "reference" {
			target = d.Target
		}
	}
	if target == "" || unique == "" || strings.Contains(unique, ".") {
		return nil, apierr.New(apierr.InvalidRequest, fmt.Sprintf("The mapping names %q: a column mapped to <field>.<key> sets the reference field <field> of %s to the record of its target whose unique key <key> holds the cell's value.", ref+"."+unique, c.Resource.Name))
	}
	return &refColumn{field: ref, target: target, unique: unique}, nil
}

// refLookup is a cell of a refColumn, in a row's body until the row's chunk resolves it (resolveRefs).
type refLookup struct {
	col  *refColumn
	text string
}

// resolveRefs replaces the refLookups in items' bodies with the ids of the records they name, looked up
// as a may see them (records.Service.IDsByUnique: a list with an "in" filter per target and key, a
// hundred values at a time); a cell no record a may read matches makes its row's problem
// (reference_not_found on the column's field). A key a may not filter by (masked, hidden, no unique key)
// fails the job, as the mapping cannot work for any row.
func resolveRefs(ctx context.Context, svc *records.Service, a records.Actor, items []records.BatchItem) error {
	wanted := map[*refColumn][]string{}
	for _, it := range items {
		for _, v := range it.Body {
			if l, ok := v.(refLookup); ok {
				wanted[l.col] = append(wanted[l.col], l.text)
			}
		}
	}
	if len(wanted) == 0 {
		return nil
	}
	found := map[*refColumn]map[string]string{}
	for col, texts := range wanted {
		t, ok := svc.Catalog().Resource(col.target)
		if !ok {
			return apierr.New(apierr.InvalidRequest, fmt.Sprintf("The mapping's %s.%s names the resource %s, which is no longer served.", col.field, col.unique, col.target))
		}
		ids, err := svc.IDsByUnique(ctx, a, t, col.unique, texts)
		if err != nil {
			return fmt.Errorf("the mapping's %s.%s: %w", col.field, col.unique, err)
		}
		found[col] = ids
	}
	for i := range items {
		it := &items[i]
		var errs field.ErrorList
		for key, v := range it.Body {
			l, ok := v.(refLookup)
			if !ok {
				continue
			}
			if id, ok := found[l.col][l.text]; ok {
				it.Body[key] = id
				continue
			}
			errs = append(errs, field.New(field.CodeNotFound, field.NewPath(key), fmt.Sprintf("no %s record you may read has %s %q", l.col.target, l.col.unique, apierr.Clip(l.text))))
		}
		if len(errs) > 0 && it.Problem == nil {
			it.Problem = apierr.Invalid("", errs)
		}
	}
	return nil
}

func csvProblem(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	if errors.Is(err, io.EOF) {
		return "the upload is empty"
	}
	return err.Error()
}

type csvSource struct {
	r    *csv.Reader
	keys []string
	refs []*refColumn // per column: how its cell names a reference's target (nil: the cell is the value)
	conv *converter
}

func (s *csvSource) offset() int64 { return s.r.InputOffset() }

func (s *csvSource) next() (records.BatchItem, error) {
	rec, err := s.r.Read()
	if errors.Is(err, io.EOF) {
		return records.BatchItem{}, io.EOF
	}
	if err != nil {
		var pe *csv.ParseError
		if !errors.As(err, &pe) {
			return records.BatchItem{}, err // the data could not be read: the job fails, and resumes
		}
		return records.BatchItem{Problem: apierr.New(apierr.InvalidRequest, "The row is not valid CSV: "+pe.Err.Error())}, nil
	}
	if len(rec) != len(s.keys) {
		return records.BatchItem{Problem: apierr.New(apierr.InvalidRequest, fmt.Sprintf("The row has %d columns; the header has %d.", len(rec), len(s.keys)))}, nil
	}
	body := map[string]any{}
	var errs field.ErrorList
	for i, key := range s.keys {
		if key == "" || rec[i] == "" {
			continue // a skipped column, or an empty cell: the field is not set
		}
		if s.refs[i] != nil {
			body[key] = refLookup{col: s.refs[i], text: strings.TrimSpace(rec[i])}
			continue
		}
		v, err := s.conv.value(key, rec[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		body[key] = v
	}
	if len(errs) > 0 {
		return records.BatchItem{Problem: apierr.Invalid("", errs)}, nil
	}
	return s.conv.item(body), nil
}

type ndjsonSource struct {
	sc   *bufio.Scanner
	conv *converter
	read int64 // bytes the scanner consumed: the lines returned and the blank ones between
}

func (s *ndjsonSource) offset() int64 { return s.read }

func (s *ndjsonSource) next() (records.BatchItem, error) {
	for s.sc.Scan() {
		line := bytes.TrimSpace(s.sc.Bytes())
		if len(line) == 0 {
			continue // blank lines are not rows
		}
		v, err := strictjson.Decode(line)
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return records.BatchItem{Problem: apierr.New(apierr.InvalidRequest, "The line is not one JSON object.")}, nil
		}
		return s.conv.item(obj), nil
	}
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return records.BatchItem{}, apierr.New(apierr.InvalidRequest, "A line of the upload is longer than 1 MiB.")
		}
		return records.BatchItem{}, err
	}
	return records.BatchItem{}, io.EOF
}

// converter turns an input row into a batch item of the job's operation, and a CSV cell into the JSON
// value its field takes.
type converter struct {
	c    *records.Collection
	spec Spec
}

// item is the batch item of body: a create, an update of its id member, or an upsert by the job's key.
func (cv *converter) item(body map[string]any) records.BatchItem {
	switch cv.spec.Operation {
	case records.ItemUpdate:
		id, _ := body["id"].(string)
		delete(body, "id")
		if !model.IsUUID(id) {
			return records.BatchItem{Problem: apierr.InvalidField(field.CodeRequired, "id", "an update needs the record's id (a UUID) in the row")}
		}
		return records.BatchItem{Op: records.ItemUpdate, ID: id, Body: body}
	case records.ItemUpsert:
		v, ok := body[cv.spec.Key]
		if !ok || v == nil {
			return records.BatchItem{Problem: apierr.InvalidField(field.CodeRequired, cv.spec.Key, "an upsert needs the unique key's value in the row")}
		}
		return records.BatchItem{Op: records.ItemUpsert, Key: cv.spec.Key, Val: fmt.Sprint(v), Body: body}
	}
	return records.BatchItem{Op: records.ItemCreate, Body: body}
}

// value converts the CSV text of the field key to the JSON value it takes: numbers for integer and
// decimal fields, booleans for boolean ones, a list (separated by ";") for a multi-select; text for the
// rest. A cell that does not convert is left as text, for the schema to explain.
func (cv *converter) value(key, text string) (any, *field.Error) {
	f, ok := cv.c.Resource.Field(key)
	if name, custom := strings.CutPrefix(key, "cf__"); custom {
		d, found := cv.c.Fields.ByKey(name)
		if found {
			f, ok = cv.c.Fields.Field(d), true
		}
	}
	if !ok || f == nil {
		return text, nil // an unknown member: the schema refuses it by name
	}
	switch f.Type {
	case model.Integer, model.Decimal:
		n := json.Number(strings.TrimSpace(text))
		if _, err := n.Float64(); err != nil {
			return text, nil
		}
		return n, nil
	case model.Boolean:
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	case model.MultiSelect:
		var out []any
		for _, o := range strings.Split(text, ";") {
			if o = strings.TrimSpace(o); o != "" {
				out = append(out, o)
			}
		}
		return out, nil
	}
	return text, nil
}

// importRows writes j's rows from the first not committed, Chunk at a time, each chunk with its
// results and the job's progress in one transaction. The next chunk is read and, for a chunk of
// creates, checked (records.Service.PrepareCreates) while the previous one is written: the processor's
// work and the database's overlap. Each chunk's rows are taken from the quota (charge) before it is
// written.
func (s *Service) importRows(ctx context.Context, svc *records.Service, a records.Actor, c *records.Collection, j *Job, charge func(context.Context, int64) error) error {
	src, err := s.newSource(ctx, j, c)
	if err != nil {
		return err
	}
	row := int64(0)
	for row < j.NextRow { // committed by an earlier run
		if _, err := src.next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		row++
	}
	ctx, cancel := context.WithCancel(ctx)
	chunks := make(chan chunk, 1)
	var readErr error
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }() // an early return stops the reader, which may wait to send
	wg.Go(func() {
		defer close(chunks)
		for {
			ch := chunk{first: row + 1}
			for len(ch.items) < s.Chunk {
				it, err := src.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					readErr = err
					return
				}
				ch.items = append(ch.items, it)
				row++
			}
			if len(ch.items) == 0 {
				return
			}
			ch.offset = src.offset()
			if err := resolveRefs(ctx, svc, a, ch.items); err != nil {
				readErr = err
				return
			}
			ch.load = s.prepareCreates(svc, a, c, j, ch.items)
			select {
			case chunks <- ch:
			case <-ctx.Done():
				return
			}
		}
	})
	for ch := range chunks {
		if err := charge(ctx, int64(len(ch.items))); err != nil {
			return err
		}
		if err := s.writeChunk(ctx, svc, a, c, j, ch); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	wg.Wait()
	return readErr
}

// chunk is a run of input rows, first… : their items and, for a chunk of creates that can go the bulk
// way, its checked rows (nil: the per-item batch).
type chunk struct {
	first  int64
	offset int64 // the upload's bytes read up to its last row
	items  []records.BatchItem
	load   *records.Load
}

// prepareCreates checks items for the bulk way when the job creates records and writes (not a dry
// run), and every row parsed: the Load, or nil for the per-item batch.
func (s *Service) prepareCreates(svc *records.Service, a records.Actor, c *records.Collection, j *Job, items []records.BatchItem) *records.Load {
	if j.Spec.DryRun || j.Spec.Operation != records.ItemCreate {
		return nil
	}
	bodies := make([]map[string]any, len(items))
	for i, it := range items {
		if it.Problem != nil {
			return nil
		}
		bodies[i] = it.Body
	}
	l, err := svc.PrepareCreates(a, c, bodies)
	if err != nil {
		return nil
	}
	return l
}

// writeChunk writes ch and, in the same transaction, its rows' results and the job's progress. A chunk
// of checked creates (ch.load) goes the bulk way (records.Service.WriteCreates: COPY on PostgreSQL);
// when it cannot (a held unique value), and for every other chunk, the items run as one per-item batch,
// which gives each row its own result. A dry run's batch rolls back; its results and progress are then
// written alone.
func (s *Service) writeChunk(ctx context.Context, svc *records.Service, a records.Actor, c *records.Collection, j *Job, ch chunk) error {
	first, items := ch.first, ch.items
	p := progress{next: first + int64(len(items)) - 1, read: int64(len(items)), bytes: ch.offset}
	if ch.load != nil {
		err := svc.WriteCreates(ctx, ch.load, func(ctx context.Context, q store.Querier, ids []string) error {
			rows := sqlgen.Rows{Table: "job_rows", Columns: []string{"workspace_id", "job_id", "row_no", "status", "record_id", "unchanged", "errors"}, Values: make([][]any, len(ids))}
			for i, id := range ids {
				rows.Values[i] = []any{j.Workspace, j.ID, first + int64(i), 201, id, false, nil}
			}
			if _, err := store.Copy(ctx, q, s.d, rows); err != nil {
				return fmt.Errorf("job rows: %w", err)
			}
			p.written = int64(len(ids))
			return s.advance(ctx, q, j, p)
		})
		if !errors.Is(err, records.ErrNotBulk) {
			return err
		}
	}
	var results []records.BatchResult
	record := func(ctx context.Context, q store.Querier, rs []records.BatchResult) error {
		results = rs
		p.written, p.failed, p.unchang = 0, 0, 0
		for i, r := range rs {
			n := first + int64(i)
			var id any
			var errs any
			switch {
			case r.Err != nil:
				p.failed++
				b, _ := json.Marshal(rowErrors(r.Err))
				errs = string(b)
			default:
				id, _ = r.Record["id"].(string)
				if r.Effect == records.Unchanged {
					p.unchang++
				} else if !j.Spec.DryRun {
					p.written++
				}
			}
			status := r.Status
			if r.Err != nil {
				status = r.Err.Status()
			}
			if _, err := q.Exec(ctx, s.d.Bind(`INSERT INTO job_rows (workspace_id, job_id, row_no, status, record_id, unchanged, errors) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				j.Workspace, j.ID, n, status, id, r.Effect == records.Unchanged && r.Err == nil, errs)); err != nil {
				return fmt.Errorf("job row %d: %w", n, err)
			}
		}
		return s.advance(ctx, q, j, p)
	}
	rc := &records.BatchReceipt{Then: record}
	if j.Spec.DryRun {
		rc.Then = func(_ context.Context, _ store.Querier, rs []records.BatchResult) error {
			results = rs
			return errDryRun
		}
	}
	_, err := svc.Batch(ctx, a, c, records.BatchPerItem, items, rc)
	if j.Spec.DryRun && errors.Is(err, errDryRun) {
		wctx := store.WithWorkspace(ctx, j.Workspace)
		return s.st.Tx(wctx, func(q store.Querier) error {
			if _, err := q.Exec(wctx, s.d.Bind("DELETE FROM job_rows WHERE workspace_id = ? AND job_id = ? AND row_no >= ? AND row_no <= ?", j.Workspace, j.ID, first, p.next)); err != nil {
				return err
			}
			return record(wctx, q, results)
		})
	}
	return err
}

// rowErrors lists an item's problems as the failures file gives them: each field's code and message, or
// the error's own.
func rowErrors(e *apierr.Error) []map[string]any {
	var out []map[string]any
	for _, fe := range e.Errors {
		out = append(out, map[string]any{"field": fe.Field, "code": string(fe.Code), "message": fe.Message})
	}
	if len(out) == 0 {
		out = append(out, map[string]any{"code": string(e.Code), "message": e.Message})
	}
	return out
}
