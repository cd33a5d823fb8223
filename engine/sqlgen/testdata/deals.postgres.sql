-- create table
CREATE TABLE IF NOT EXISTS "rec_deals" (
  "workspace_id" uuid NOT NULL,
  "id" uuid NOT NULL,
  "name" text,
  "description" text,
  "amount" numeric,
  "currency" text,
  "probability" bigint,
  "weighted_amount" numeric,
  "expected_close_date" date,
  "close_date" date,
  "status" text,
  "pipeline_id" uuid,
  "stage_id" uuid,
  "company_id" uuid,
  "primary_contact_id" uuid,
  "source_id" uuid,
  "loss_reason_id" uuid,
  "forecast_category_id" uuid,
  "next_step" text,
  "last_activity_at" timestamptz,
  "owner_id" uuid,
  "created_at" timestamptz NOT NULL,
  "updated_at" timestamptz NOT NULL,
  "archived" boolean NOT NULL DEFAULT false,
  "archived_at" timestamptz,
  "archive_reason" text,
  "custom_fields" jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY ("workspace_id", "id")
)

-- indexes
CREATE INDEX IF NOT EXISTS "rec_deals_archived_created_idx" ON "rec_deals" ("workspace_id", "archived", "created_at", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_name_idx" ON "rec_deals" ("workspace_id", "name", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_amount_idx" ON "rec_deals" ("workspace_id", "amount", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_probability_idx" ON "rec_deals" ("workspace_id", "probability", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_weighted_amount_idx" ON "rec_deals" ("workspace_id", "weighted_amount", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_expected_close_date_idx" ON "rec_deals" ("workspace_id", "expected_close_date", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_close_date_idx" ON "rec_deals" ("workspace_id", "close_date", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_status_idx" ON "rec_deals" ("workspace_id", "status", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_pipeline_id_idx" ON "rec_deals" ("workspace_id", "pipeline_id", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_stage_id_idx" ON "rec_deals" ("workspace_id", "stage_id", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_company_id_idx" ON "rec_deals" ("workspace_id", "company_id", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_primary_contact_id_idx" ON "rec_deals" ("workspace_id", "primary_contact_id", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_source_id_idx" ON "rec_deals" ("workspace_id", "source_id", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_loss_reason_id_idx" ON "rec_deals" ("workspace_id", "loss_reason_id", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_forecast_category_id_idx" ON "rec_deals" ("workspace_id", "forecast_category_id", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_last_activity_at_idx" ON "rec_deals" ("workspace_id", "last_activity_at", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_owner_id_idx" ON "rec_deals" ("workspace_id", "owner_id", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_created_at_idx" ON "rec_deals" ("workspace_id", "created_at", "id")
CREATE INDEX IF NOT EXISTS "rec_deals_updated_at_idx" ON "rec_deals" ("workspace_id", "updated_at", "id")

-- search
ALTER TABLE "rec_deals" ADD COLUMN IF NOT EXISTS "_search_text" text
ALTER TABLE "rec_deals" ADD COLUMN "_search" tsvector GENERATED ALWAYS AS (array_to_tsvector(string_to_array(coalesce("_search_text", ''), ' '))) STORED
CREATE INDEX IF NOT EXISTS "rec_deals_search_idx" ON "rec_deals" USING gin ("_search")

-- insert (the search text: the tokens of name, description and next_step)
INSERT INTO "rec_deals" ("workspace_id", "id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "owner_id", "created_at", "updated_at", "archived_at", "archive_reason", "custom_fields", "_search_text") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)
-- args: [ws 0190a6d4-0000-7000-8000-000000000001 Plist-007-AB12 renewal Crème brûlée for ann@x.example <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> plist 007 ab12 renewal creme brulee for ann x example]

-- get
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "id" = $2
-- args: [ws 0190a6d4-0000-7000-8000-000000000001]

-- get under a department record rule
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "id" = $2 AND ("owner_id" = $3 OR "owner_id" IN (SELECT "id" FROM "members" WHERE "workspace_id" = $4 AND "department_id" = $5))
-- args: [ws 0190a6d4-0000-7000-8000-000000000001 m1 ws d1]

-- update
UPDATE "rec_deals" SET "name" = $1, "amount" = $2, "_search_text" = $3 WHERE "workspace_id" = $4 AND "id" = $5
-- args: [Renewal 10.5 renewal ws 0190a6d4-0000-7000-8000-000000000001]

-- page 3, filters joined with or, search
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "archived" = $2 AND ("status" IN ($3, $4) OR "name" ILIKE $5 ESCAPE '\' OR "close_date" IS NULL OR "probability" IS DISTINCT FROM $6) AND "_search" @@ $7::tsquery ORDER BY "amount" ASC, "id" ASC LIMIT $8 OFFSET $9
-- args: [ws false open won %50\%\_off% 50 'acme':* & 'renewal':* 11 20]

-- nested filter groups
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "archived" = $2 AND (("status" = $3 OR ("amount" > $4 AND ("probability" >= $5 OR "close_date" IS NULL))) AND "name" ILIKE $6 ESCAPE '\') ORDER BY "created_at" DESC, "id" DESC LIMIT $7
-- args: [ws false won 10000 50 Ac% 26]

-- count under nested filter groups
SELECT count(*) FROM (SELECT 1 FROM "rec_deals" WHERE "workspace_id" = $1 AND "archived" = $2 AND (("status" = $3 OR ("amount" > $4 AND ("probability" >= $5 OR "close_date" IS NULL))) AND "name" ILIKE $6 ESCAPE '\')) AS counted
-- args: [ws false won 10000 50 Ac%]

-- filter paths: a reference, an association under an owned rule, a custom field of the target
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "archived" = $2 AND ("company_id" IN (SELECT "id" FROM "rec_companies" WHERE "workspace_id" = $3 AND "archived" = $4 AND "billing_city" = $5) OR ("id" IN (SELECT "target_id" FROM "associations" WHERE "workspace_id" = $6 AND "owner_resource" = $7 AND "name" = $8 AND "owner_id" IN (SELECT "id" FROM "rec_contacts" WHERE "workspace_id" = $9 AND "archived" = $10 AND "email" IS DISTINCT FROM $11 AND "owner_id" = $12)) AND "company_id" IN (SELECT "id" FROM "rec_companies" WHERE "workspace_id" = $13 AND "archived" = $14 AND "id" IN (SELECT "record_id" FROM "custom_values" WHERE "workspace_id" = $15 AND "field_id" = $16 AND "t" ILIKE $17 ESCAPE '\')))) ORDER BY "created_at" DESC, "id" DESC LIMIT $18
-- args: [ws false ws false Berlin ws contacts deals ws false a@x.example m1 ws false ws 0190a6d4-0000-7000-8000-0000000000cf Gold% 26]

-- cursor, non-null key (created_at desc)
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "archived" = $2 AND ("created_at", "id") < ($3, $4) ORDER BY "created_at" DESC, "id" DESC LIMIT $5
-- args: [ws false 2026-11-21 09:30:00 +0000 UTC 0190a6d4-0000-7000-8000-000000000009 26]

-- cursor, nullable key, value band (amount asc)
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "archived" = $2 AND ("amount", "id") > ($3, $4) ORDER BY "amount" ASC, "id" ASC LIMIT $5
-- args: [ws false 100 0190a6d4-0000-7000-8000-000000000009 26]

SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "archived" = $2 AND "amount" IS NULL ORDER BY "amount" ASC, "id" ASC LIMIT $3
-- args: [ws false 26]

-- cursor, nullable key, null band (amount desc)
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "archived" = $2 AND "amount" IS NULL AND "id" < $3 ORDER BY "amount" DESC, "id" DESC LIMIT $4
-- args: [ws false 0190a6d4-0000-7000-8000-000000000009 26]

SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = $1 AND "archived" = $2 AND "amount" IS NOT NULL ORDER BY "amount" DESC, "id" DESC LIMIT $3
-- args: [ws false 26]

