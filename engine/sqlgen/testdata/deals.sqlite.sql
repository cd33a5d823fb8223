-- create table
CREATE TABLE IF NOT EXISTS "rec_deals" (
  "workspace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "name" TEXT,
  "description" TEXT,
  "amount" REAL,
  "currency" TEXT,
  "probability" INTEGER,
  "weighted_amount" REAL,
  "expected_close_date" TEXT,
  "close_date" TEXT,
  "status" TEXT,
  "pipeline_id" TEXT,
  "stage_id" TEXT,
  "company_id" TEXT,
  "primary_contact_id" TEXT,
  "source_id" TEXT,
  "loss_reason_id" TEXT,
  "forecast_category_id" TEXT,
  "next_step" TEXT,
  "last_activity_at" TEXT,
  "owner_id" TEXT,
  "created_at" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  "archived" INTEGER NOT NULL DEFAULT 0,
  "archived_at" TEXT,
  "archive_reason" TEXT,
  "custom_fields" TEXT NOT NULL DEFAULT '{}',
  "_search_text" TEXT,
  PRIMARY KEY ("workspace_id", "id")
) STRICT

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
ALTER TABLE "rec_deals" ADD COLUMN "_search_text" TEXT
CREATE VIRTUAL TABLE "rec_deals_fts" USING fts5("_search_text", content='rec_deals', content_rowid='rowid', tokenize='ascii')
CREATE TRIGGER "rec_deals_fts_ai" AFTER INSERT ON "rec_deals" BEGIN INSERT INTO "rec_deals_fts"(rowid, "_search_text") VALUES (new.rowid, new."_search_text"); END
CREATE TRIGGER "rec_deals_fts_ad" AFTER DELETE ON "rec_deals" BEGIN INSERT INTO "rec_deals_fts"("rec_deals_fts", rowid, "_search_text") VALUES ('delete', old.rowid, old."_search_text"); END
CREATE TRIGGER "rec_deals_fts_au" AFTER UPDATE OF "_search_text" ON "rec_deals" BEGIN INSERT INTO "rec_deals_fts"("rec_deals_fts", rowid, "_search_text") VALUES ('delete', old.rowid, old."_search_text"); INSERT INTO "rec_deals_fts"(rowid, "_search_text") VALUES (new.rowid, new."_search_text"); END
INSERT INTO "rec_deals_fts"("rec_deals_fts") VALUES ('rebuild')

-- insert (the search text: the tokens of name, description and next_step)
INSERT INTO "rec_deals" ("workspace_id", "id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "owner_id", "created_at", "updated_at", "archived_at", "archive_reason", "custom_fields", "_search_text") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
-- args: [ws 0190a6d4-0000-7000-8000-000000000001 Plist-007-AB12 renewal Crème brûlée for ann@x.example <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> plist 007 ab12 renewal creme brulee for ann x example]

-- get
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = ? AND "id" = ?
-- args: [ws 0190a6d4-0000-7000-8000-000000000001]

-- get under a department record rule
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = ? AND "id" = ? AND ("owner_id" = ? OR "owner_id" IN (SELECT "id" FROM "members" WHERE "workspace_id" = ? AND "department_id" = ?))
-- args: [ws 0190a6d4-0000-7000-8000-000000000001 m1 ws d1]

-- update
UPDATE "rec_deals" SET "name" = ?, "amount" = ?, "_search_text" = ? WHERE "workspace_id" = ? AND "id" = ?
-- args: [Renewal 10.5 renewal ws 0190a6d4-0000-7000-8000-000000000001]

-- page 3, filters joined with or, search
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = ? AND "archived" = ? AND ("status" IN (?, ?) OR "name" LIKE ? ESCAPE '\' OR "close_date" IS NULL OR "probability" IS NOT ?) AND "rec_deals".rowid IN (SELECT rowid FROM "rec_deals_fts" WHERE "rec_deals_fts" MATCH ?) ORDER BY "amount" ASC, "id" ASC LIMIT ? OFFSET ?
-- args: [ws 0 open won %50\%\_off% 50 "acme"* AND "renewal"* 11 20]

-- nested filter groups
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = ? AND "archived" = ? AND (("status" = ? OR ("amount" > ? AND ("probability" >= ? OR "close_date" IS NULL))) AND "name" LIKE ? ESCAPE '\') ORDER BY "created_at" DESC, "id" DESC LIMIT ?
-- args: [ws 0 won 10000 50 Ac% 26]

-- count under nested filter groups
SELECT count(*) FROM (SELECT 1 FROM "rec_deals" WHERE "workspace_id" = ? AND "archived" = ? AND (("status" = ? OR ("amount" > ? AND ("probability" >= ? OR "close_date" IS NULL))) AND "name" LIKE ? ESCAPE '\')) AS counted
-- args: [ws 0 won 10000 50 Ac%]

-- filter paths: a reference, an association under an owned rule, a custom field of the target
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = ? AND "archived" = ? AND ("company_id" IN (SELECT "id" FROM "rec_companies" WHERE "workspace_id" = ? AND "archived" = ? AND "billing_city" = ?) OR ("id" IN (SELECT "target_id" FROM "associations" WHERE "workspace_id" = ? AND "owner_resource" = ? AND "name" = ? AND "owner_id" IN (SELECT "id" FROM "rec_contacts" WHERE "workspace_id" = ? AND "archived" = ? AND "email" IS NOT ? AND "owner_id" = ?)) AND "company_id" IN (SELECT "id" FROM "rec_companies" WHERE "workspace_id" = ? AND "archived" = ? AND "id" IN (SELECT "record_id" FROM "custom_values" WHERE "workspace_id" = ? AND "field_id" = ? AND "t" LIKE ? ESCAPE '\')))) ORDER BY "created_at" DESC, "id" DESC LIMIT ?
-- args: [ws 0 ws 0 Berlin ws contacts deals ws 0 a@x.example m1 ws 0 ws 0190a6d4-0000-7000-8000-0000000000cf Gold% 26]

-- cursor, non-null key (created_at desc)
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = ? AND "archived" = ? AND ("created_at", "id") < (?, ?) ORDER BY "created_at" DESC, "id" DESC LIMIT ?
-- args: [ws 0 2026-11-21T09:30:00.000000Z 0190a6d4-0000-7000-8000-000000000009 26]

-- cursor, nullable key, value band (amount asc)
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = ? AND "archived" = ? AND ("amount", "id") > (?, ?) ORDER BY "amount" ASC, "id" ASC LIMIT ?
-- args: [ws 0 100 0190a6d4-0000-7000-8000-000000000009 26]

-- cursor, nullable key, null band (amount desc)
SELECT "workspace_id", "name", "description", "amount", "currency", "probability", "weighted_amount", "expected_close_date", "close_date", "status", "pipeline_id", "stage_id", "company_id", "primary_contact_id", "source_id", "loss_reason_id", "forecast_category_id", "next_step", "last_activity_at", "id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields" FROM "rec_deals" WHERE "workspace_id" = ? AND "archived" = ? AND "amount" IS NULL AND "id" < ? ORDER BY "amount" DESC, "id" DESC LIMIT ?
-- args: [ws 0 0190a6d4-0000-7000-8000-000000000009 26]

