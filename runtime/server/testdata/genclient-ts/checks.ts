// Types only, never run: what the generated types accept and refuse. tsc --noEmit fails on an error
// here, and on a @ts-expect-error line that is no error.
import type { components as workspace } from "./schema.js";
import type { components as generic, paths as genericPaths } from "./generic.js";

// The workspace's document types its custom fields.
type Update = workspace["schemas"]["CompaniesUpdate"];
type Create = workspace["requestBodies"]["CompaniesCreate"]["content"]["application/json"];
export const tierByMember: Update = { cf__tier: "silver" };
export const tierInObject: Update = { custom_fields: { tier: "gold" } };
// @ts-expect-error tier is a select of gold and silver
export const wrongTier: Update = { custom_fields: { tier: "bronze" } };
// @ts-expect-error the workspace has no custom field named nope
export const unknownField: Update = { custom_fields: { nope: 1 } };
// An update requires nothing: no default makes a member required.
export const emptyUpdate: Update = {};
// A create needs only its required fields.
export const minimalCreate: Create = { name: "Only a name" };
// @ts-expect-error name is required on create
export const nameless: Create = { industry: "software" };

// The generic document: custom fields hold any field value.
type GenericUpdate = generic["schemas"]["CompaniesUpdate"];
type GenericCreate = generic["requestBodies"]["CompaniesCreate"]["content"]["application/json"];
export const anyField: GenericUpdate = { custom_fields: { tier: "gold", seats: 3, flags: ["a"], gone: null } };
export const anyMember: GenericUpdate = { cf__tier: "gold", employee_count: 3 };
export const genericCreate: GenericCreate = { name: "x", custom_fields: { tier: "gold" } };
export const genericEmpty: GenericUpdate = {};
// @ts-expect-error a custom field value is not an object
export const objectValue: GenericUpdate = { custom_fields: { tier: { nested: true } } };
// Association attributes, typed.
type LinkBody = NonNullable<genericPaths["/v1/contacts/{id}/{association}/{target_id}"]["put"]["requestBody"]>["content"]["application/json"];
export const attrs: LinkBody = { is_primary: true, job_title: "CTO" };
// @ts-expect-error is_primary is a boolean
export const badAttrs: LinkBody = { is_primary: "yes" };
