// The TypeScript client that openapi-typescript generates with its default flags from the document
// served for the test's key (schema.d.ts, the workspace's document: custom_fields.tier is typed), driven
// with openapi-fetch against a running recordsd: the companies cycle (create, get, list, query, update,
// archive, restore), custom field writes, and a link with attributes. TestGeneratedTypeScriptClient
// writes the generated files beside it, type-checks everything with tsc --noEmit, compiles and runs it.
// It prints what it saw as one JSON object.
//
// Usage: node dist/main.js BASE_URL API_KEY
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type Company = components["schemas"]["CompaniesRecord"];

// Node's process, declared here rather than through @types/node: argv is all the driver reads.
declare const process: { argv: string[] };

const [base, key] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${key}` } });

// data returns a response's data or throws with its status and error.
function data<T>(step: string, res: { data?: { data: T }; error?: unknown; response: Response }): T {
  if (res.data === undefined) {
    throw new Error(`${step}: ${res.response.status} ${JSON.stringify(res.error)}`);
  }
  return res.data.data;
}

const out: Record<string, unknown> = {};

// Create: only what is set; defaulted members may be left out.
const created: Company = data("create", await client.POST("/v1/companies", {
  params: { header: { "Idempotency-Key": `ts-create-${Date.now()}` } },
  body: { name: "Typed Client Inc", lifecycle_stage: "customer", employee_count: 12, custom_fields: { tier: "gold" } },
}));
const id = created.id;
out.created = id;
out.created_tier = created.custom_fields?.tier;

const got = data("get", await client.GET("/v1/companies/{id}", { params: { path: { id } } }));
out.got_name = got.name;

const filter = JSON.stringify([{ field: "name", op: "starts_with", value: "Typed Client" }]);
const listed = await client.GET("/v1/companies", { params: { query: { filter, page_size: 10, sort: "name", order: "asc" } } });
if (!listed.data) throw new Error(`list: ${listed.response.status} ${JSON.stringify(listed.error)}`);
out.listed = listed.data.data.map((c) => c.id);

const queried = await client.POST("/v1/companies/query", {
  body: { filters: [{ field: "name", op: "eq", value: "Typed Client Inc" }], page_size: 5, cursor: "start" },
});
if (!queried.data) throw new Error(`query: ${queried.response.status} ${JSON.stringify(queried.error)}`);
out.queried = queried.data.data.map((c) => c.id);

// Update: only employee_count; lifecycle_stage is neither required nor resent.
const updated = data("update", await client.PATCH("/v1/companies/{id}", { params: { path: { id } }, body: { employee_count: 40 } }));
out.updated_employee_count = updated.employee_count;
out.updated_lifecycle_stage = updated.lifecycle_stage;

// Custom field values: as a cf__<key> member, then in custom_fields.
const cf = data("cf__tier", await client.PATCH("/v1/companies/{id}", { params: { path: { id } }, body: { cf__tier: "silver" } }));
out.cf_member_tier = cf.custom_fields?.tier;
const cf2 = data("custom_fields", await client.PATCH("/v1/companies/{id}", { params: { path: { id } }, body: { custom_fields: { tier: "gold" } } }));
out.custom_fields_tier = cf2.custom_fields?.tier;

const archived = data("archive", await client.DELETE("/v1/companies/{id}", { params: { path: { id } }, body: { reason: "Typed archive" } }));
out.archived = archived.archived;
out.archive_reason = archived.archive_reason;
const restored = data("restore", await client.POST("/v1/companies/{id}/restore", { params: { path: { id } } }));
out.restored_archived = restored.archived;

// A link with attributes: a contact works at the company.
const contact = data("create contact", await client.POST("/v1/contacts", { body: { first_name: "Ada", last_name: "Typed" } }));
const link = data("link", await client.PUT("/v1/contacts/{id}/{association}/{target_id}", {
  params: { path: { id: contact.id, association: "companies", target_id: id } },
  body: { is_primary: true, job_title: "CTO" },
}));
out.contact = contact.id;
out.link_id = link.id;
out.link_attributes = link.attributes;

console.log(JSON.stringify(out));
