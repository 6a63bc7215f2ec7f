import { describe, expect, test } from 'bun:test';
import {
  CLICKHOUSE, CLICKHOUSE_18, clickhouseFeatures, compileEventFilters, compileSelect, DUCKDB, FUNCTION_NAMES, type Dialect,
  type QueryParam, type SqlFragment,
} from '../../../src/core/query';
import { NOW } from './cases';

/**
 * Every function of the catalog and every operator, compiled for DuckDB, modern ClickHouse (typed
 * `{p0:Type}` parameters, JSONExtract, DateTime64) and ClickHouse 18.16 (escaped literals,
 * visitParam, DateTime): the whole rendered SQL and its values. What these statements answer is
 * checked on chDB in clickhouse.test.ts; here, that each dialect writes what it should.
 */

type Rendered = { sql: string; params: readonly QueryParam[] | Readonly<Record<string, QueryParam>> };
type Row<T> = [T, Rendered, Rendered, string];

const render = (d: Dialect, f: SqlFragment) => d.render(f);
const inEach = (compile: (d: Dialect) => SqlFragment) => [DUCKDB, CLICKHOUSE, CLICKHOUSE_18].map((d) => render(d, compile(d)));

/** One select entry each (aliased `c0`): values, and booleans where they must be exactly true or false. */
const SELECTED: Row<string>[] = [
  ["count()", { sql: "count(*) AS c0", params: []}, { sql: "count(*) AS c0", params: {}}, "count(*) AS c0"],
  ["count(distinct_id)", { sql: "count(distinct_id) AS c0", params: []}, { sql: "count(distinct_id) AS c0", params: {}}, "count(distinct_id) AS c0"],
  ["uniq(distinct_id)", { sql: "count(DISTINCT distinct_id) AS c0", params: []}, { sql: "count(DISTINCT distinct_id) AS c0", params: {}}, "count(DISTINCT distinct_id) AS c0"],
  ["sum(length(event))", { sql: "sum(CAST(length(event) AS DOUBLE)) AS c0", params: []}, { sql: "if(count(toFloat64(lengthUTF8(event))) = 0, NULL, sum(toFloat64(lengthUTF8(event)))) AS c0", params: {}}, "if(count(toFloat64(lengthUTF8(event))) = 0, NULL, sum(toFloat64(lengthUTF8(event)))) AS c0"],
  ["avg(length(event))", { sql: "avg(CAST(length(event) AS DOUBLE)) AS c0", params: []}, { sql: "if(count(toFloat64(lengthUTF8(event))) = 0, NULL, avg(toFloat64(lengthUTF8(event)))) AS c0", params: {}}, "if(count(toFloat64(lengthUTF8(event))) = 0, NULL, avg(toFloat64(lengthUTF8(event)))) AS c0"],
  ["min(timestamp)", { sql: "min(timestamp) AS c0", params: []}, { sql: "if(count(timestamp) = 0, NULL, min(timestamp)) AS c0", params: {}}, "if(count(timestamp) = 0, NULL, min(timestamp)) AS c0"],
  ["max(event)", { sql: "max(event) AS c0", params: []}, { sql: "if(count(event) = 0, NULL, max(event)) AS c0", params: {}}, "if(count(event) = 0, NULL, max(event)) AS c0"],
  ["now()", { sql: "CAST(? AS TIMESTAMP) AS c0", params: ["2024-01-10 12:00:00.000000"]}, { sql: "toDateTime64({p0:String}, 6, 'UTC') AS c0", params: {"p0":"2024-01-10 12:00:00.000000"}}, "toDateTime('2024-01-10 12:00:00', 'UTC') AS c0"],
  ["today()", { sql: "CAST(? AS DATE) AS c0", params: ["2024-01-10"]}, { sql: "toDate({p0:String}) AS c0", params: {"p0":"2024-01-10"}}, "toDate('2024-01-10') AS c0"],
  ["toDateTime(distinct_id)", { sql: "CAST(TRY_CAST(distinct_id AS TIMESTAMPTZ) AS TIMESTAMP) AS c0", params: []}, { sql: "parseDateTime64BestEffortOrNull(if(match(distinct_id, '^\\\\d{4}-\\\\d{1,2}-\\\\d{1,2}'), distinct_id, 'x'), 6, 'UTC') AS c0", params: {}}, "parseDateTimeBestEffortOrNull(if(match(distinct_id, '^\\\\d{4}-\\\\d{1,2}-\\\\d{1,2}'), distinct_id, 'x'), 'UTC') AS c0"],
  ["toDateTime('2024-01-02 03:04:05')", { sql: "CAST(? AS TIMESTAMP) AS c0", params: ["2024-01-02 03:04:05.000000"]}, { sql: "toDateTime64({p0:String}, 6, 'UTC') AS c0", params: {"p0":"2024-01-02 03:04:05.000000"}}, "toDateTime('2024-01-02 03:04:05', 'UTC') AS c0"],
  ["toDate(timestamp)", { sql: "CAST(timestamp AS DATE) AS c0", params: []}, { sql: "toDate(timestamp) AS c0", params: {}}, "toDate(timestamp) AS c0"],
  ["toDate('2024-01-02')", { sql: "CAST(? AS DATE) AS c0", params: ["2024-01-02"]}, { sql: "toDate({p0:String}) AS c0", params: {"p0":"2024-01-02"}}, "toDate('2024-01-02') AS c0"],
  ["toStartOfMinute(timestamp)", { sql: "date_trunc('minute', timestamp) AS c0", params: []}, { sql: "toStartOfMinute(timestamp) AS c0", params: {}}, "toStartOfMinute(timestamp) AS c0"],
  ["toStartOfHour(timestamp)", { sql: "date_trunc('hour', timestamp) AS c0", params: []}, { sql: "toStartOfHour(timestamp) AS c0", params: {}}, "toStartOfHour(timestamp) AS c0"],
  ["toStartOfDay(timestamp)", { sql: "date_trunc('day', timestamp) AS c0", params: []}, { sql: "toStartOfDay(timestamp) AS c0", params: {}}, "toStartOfDay(timestamp) AS c0"],
  ["toStartOfWeek(timestamp)", { sql: "CAST(date_trunc('week', timestamp + INTERVAL 1 DAY) - INTERVAL 1 DAY AS DATE) AS c0", params: []}, { sql: "subtractDays(toMonday(addDays(timestamp, 1)), 1) AS c0", params: {}}, "subtractDays(toMonday(addDays(timestamp, 1)), 1) AS c0"],
  ["toStartOfMonth(timestamp)", { sql: "CAST(date_trunc('month', timestamp) AS DATE) AS c0", params: []}, { sql: "toStartOfMonth(timestamp) AS c0", params: {}}, "toStartOfMonth(timestamp) AS c0"],
  ["toStartOfYear(timestamp)", { sql: "CAST(date_trunc('year', timestamp) AS DATE) AS c0", params: []}, { sql: "toStartOfYear(timestamp) AS c0", params: {}}, "toStartOfYear(timestamp) AS c0"],
  ["toString(person.is_identified)", { sql: "CAST(person_is_identified AS VARCHAR) AS c0", params: []}, { sql: "multiIf(isNull(person_is_identified), NULL, person_is_identified, 'true', 'false') AS c0", params: {}}, "multiIf(isNull(person_is_identified), NULL, person_is_identified, 'true', 'false') AS c0"],
  ["toString(length(event))", { sql: "CAST(length(event) AS VARCHAR) AS c0", params: []}, { sql: "toString(lengthUTF8(event)) AS c0", params: {}}, "toString(lengthUTF8(event)) AS c0"],
  ["toInt(distinct_id)", { sql: "TRY_CAST(distinct_id AS BIGINT) AS c0", params: []}, { sql: "toInt64OrNull(toString(round(toFloat64OrNull(distinct_id)))) AS c0", params: {}}, "toInt64OrNull(toString(round(toFloat64OrNull(distinct_id)))) AS c0"],
  ["toInt(1.5)", { sql: "TRY_CAST(? AS BIGINT) AS c0", params: [1.5]}, { sql: "toInt64OrNull(toString(round({p0:Float64}))) AS c0", params: {"p0":"1.5"}}, "toInt64OrNull(toString(round(1.5))) AS c0"],
  ["toInt(person.is_identified)", { sql: "TRY_CAST(person_is_identified AS BIGINT) AS c0", params: []}, { sql: "toInt64(person_is_identified) AS c0", params: {}}, "toInt64(person_is_identified) AS c0"],
  ["toFloat(distinct_id)", { sql: "TRY_CAST(distinct_id AS DOUBLE) AS c0", params: []}, { sql: "toFloat64OrNull(distinct_id) AS c0", params: {}}, "toFloat64OrNull(distinct_id) AS c0"],
  ["toFloat(3)", { sql: "TRY_CAST(? AS DOUBLE) AS c0", params: [3]}, { sql: "toFloat64({p0:Int64}) AS c0", params: {"p0":3}}, "toFloat64(3) AS c0"],
  ["lower(event)", { sql: "lower(event) AS c0", params: []}, { sql: "lowerUTF8(event) AS c0", params: {}}, "lowerUTF8(event) AS c0"],
  ["upper(event)", { sql: "upper(event) AS c0", params: []}, { sql: "upperUTF8(event) AS c0", params: {}}, "upperUTF8(event) AS c0"],
  ["length(event)", { sql: "length(event) AS c0", params: []}, { sql: "lengthUTF8(event) AS c0", params: {}}, "lengthUTF8(event) AS c0"],
  ["match(event, '^\\\\$p')", { sql: "regexp_matches(event, ?) AS c0", params: ["^\\$p"]}, { sql: "match(event, {p0:String}) AS c0", params: {"p0":"^\\$p"}}, "match(event, '^\\\\$p') AS c0"],
  ["match(event, '(?i)^\\\\$P')", { sql: "regexp_matches(event, ?) AS c0", params: ["(?i)^\\$P"]}, { sql: "match(event, {p0:String}) AS c0", params: {"p0":"(?i:^\\$P)"}}, "match(event, '(?i:^\\\\$P)') AS c0"],
  ["coalesce(person_id, 'none')", { sql: "coalesce(person_id, ?) AS c0", params: ["none"]}, { sql: "coalesce(person_id, {p0:String}) AS c0", params: {"p0":"none"}}, "coalesce(person_id, 'none') AS c0"],
  ["ifNull(person_id, distinct_id)", { sql: "coalesce(person_id, distinct_id) AS c0", params: []}, { sql: "coalesce(person_id, distinct_id) AS c0", params: {}}, "coalesce(person_id, distinct_id) AS c0"],
  ["length(event) + 1", { sql: "CAST(length(event) AS DOUBLE) + CAST(? AS DOUBLE) AS c0", params: [1]}, { sql: "toFloat64(lengthUTF8(event)) + toFloat64({p0:Int64}) AS c0", params: {"p0":1}}, "toFloat64(lengthUTF8(event)) + toFloat64(1) AS c0"],
  ["distinct_id - 1", { sql: "TRY_CAST(distinct_id AS DOUBLE) - CAST(? AS DOUBLE) AS c0", params: [1]}, { sql: "toFloat64OrNull(distinct_id) - toFloat64({p0:Int64}) AS c0", params: {"p0":1}}, "toFloat64OrNull(distinct_id) - toFloat64(1) AS c0"],
  ["length(event) * 2", { sql: "CAST(length(event) AS DOUBLE) * CAST(? AS DOUBLE) AS c0", params: [2]}, { sql: "toFloat64(lengthUTF8(event)) * toFloat64({p0:Int64}) AS c0", params: {"p0":2}}, "toFloat64(lengthUTF8(event)) * toFloat64(2) AS c0"],
  ["length(event) / 2", { sql: "CAST(length(event) AS DOUBLE) / CAST(? AS DOUBLE) AS c0", params: [2]}, { sql: "toFloat64(lengthUTF8(event)) / toFloat64({p0:Int64}) AS c0", params: {"p0":2}}, "toFloat64(lengthUTF8(event)) / toFloat64(2) AS c0"],
  ["length(event) % 2", { sql: "CAST(length(event) AS DOUBLE) % CAST(? AS DOUBLE) AS c0", params: [2]}, { sql: "(toFloat64(lengthUTF8(event)) - toFloat64({p0:Int64}) * trunc(toFloat64(lengthUTF8(event)) / toFloat64({p1:Int64}))) AS c0", params: {"p0":2,"p1":2}}, "(toFloat64(lengthUTF8(event)) - toFloat64(2) * trunc(toFloat64(lengthUTF8(event)) / toFloat64(2))) AS c0"],
  ["-length(event)", { sql: "-CAST(length(event) AS DOUBLE) AS c0", params: []}, { sql: "-toFloat64(lengthUTF8(event)) AS c0", params: {}}, "-toFloat64(lengthUTF8(event)) AS c0"],
  ["timestamp + INTERVAL 1 DAY", { sql: "timestamp + to_days(?) AS c0", params: [1]}, { sql: "timestamp + toIntervalDay({p0:Int64}) AS c0", params: {"p0":1}}, "timestamp + toIntervalDay(1) AS c0"],
  ["timestamp - INTERVAL 2 WEEK", { sql: "timestamp - to_weeks(?) AS c0", params: [2]}, { sql: "timestamp - toIntervalWeek({p0:Int64}) AS c0", params: {"p0":2}}, "timestamp - toIntervalWeek(2) AS c0"],
  ["timestamp - INTERVAL 1 QUARTER", { sql: "timestamp - to_months(?) AS c0", params: [3]}, { sql: "timestamp - toIntervalMonth({p0:Int64}) AS c0", params: {"p0":3}}, "timestamp - toIntervalMonth(3) AS c0"],
  ["now() - INTERVAL 90 MINUTE", { sql: "CAST(? AS TIMESTAMP) - to_minutes(?) AS c0", params: ["2024-01-10 12:00:00.000000",90]}, { sql: "toDateTime64({p0:String}, 6, 'UTC') - toIntervalMinute({p1:Int64}) AS c0", params: {"p0":"2024-01-10 12:00:00.000000","p1":90}}, "toDateTime('2024-01-10 12:00:00', 'UTC') - toIntervalMinute(90) AS c0"],
  ["event = 'signup'", { sql: "event = ? AS c0", params: ["signup"]}, { sql: "event = {p0:String} AS c0", params: {"p0":"signup"}}, "event = 'signup' AS c0"],
  ["person_id = person_id", { sql: "person_id IS NOT DISTINCT FROM person_id AS c0", params: []}, { sql: "coalesce(person_id = person_id, isNull(person_id) AND isNull(person_id)) AS c0", params: {}}, "coalesce(person_id = person_id, isNull(person_id) AND isNull(person_id)) AS c0"],
  ["person_id != 'p1'", { sql: "person_id IS DISTINCT FROM ? AS c0", params: ["p1"]}, { sql: "NOT coalesce(person_id = {p0:String}, isNull(person_id) AND isNull({p1:String})) AS c0", params: {"p0":"p1","p1":"p1"}}, "NOT coalesce(person_id = 'p1', isNull(person_id) AND isNull('p1')) AS c0"],
  ["event != 'x'", { sql: "event <> ? AS c0", params: ["x"]}, { sql: "event <> {p0:String} AS c0", params: {"p0":"x"}}, "event <> 'x' AS c0"],
  ["length(event) > 10", { sql: "length(event) > ? AS c0", params: [10]}, { sql: "lengthUTF8(event) > {p0:Int64} AS c0", params: {"p0":10}}, "lengthUTF8(event) > 10 AS c0"],
  ["timestamp >= '2024-01-05'", { sql: "timestamp >= CAST(? AS TIMESTAMP) AS c0", params: ["2024-01-05 00:00:00.000000"]}, { sql: "timestamp >= toDateTime64({p0:String}, 6, 'UTC') AS c0", params: {"p0":"2024-01-05 00:00:00.000000"}}, "(timestamp >= toDateTime('2024-01-05 00:00:00', 'UTC') AND (toInt64(toUnixTimestamp(timestamp)) * 1000 + timestamp_ms) >= 1704412800000) AS c0"],
  ["distinct_id < 10.5", { sql: "COALESCE(TRY_CAST(distinct_id AS DOUBLE) < ?, FALSE) AS c0", params: [10.5]}, { sql: "coalesce(toFloat64OrNull(distinct_id) < {p0:Float64}, 0) AS c0", params: {"p0":"10.5"}}, "coalesce(toFloat64OrNull(distinct_id) < 10.5, 0) AS c0"],
  ["toDate(timestamp) = '2024-01-10'", { sql: "CAST(timestamp AS DATE) = CAST(? AS TIMESTAMP) AS c0", params: ["2024-01-10 00:00:00.000000"]}, { sql: "toDateTime64(toDate(timestamp), 6, 'UTC') = toDateTime64({p0:String}, 6, 'UTC') AS c0", params: {"p0":"2024-01-10 00:00:00.000000"}}, "toDateTime(toDate(timestamp), 'UTC') = toDateTime('2024-01-10 00:00:00', 'UTC') AS c0"],
  ["length(event) <= 10", { sql: "length(event) <= ? AS c0", params: [10]}, { sql: "lengthUTF8(event) <= {p0:Int64} AS c0", params: {"p0":10}}, "lengthUTF8(event) <= 10 AS c0"],
  ["event = 'a' AND (distinct_id = 'b' OR NOT person.is_identified)", { sql: "event = ? AND (distinct_id = ? OR NOT person_is_identified) AS c0", params: ["a","b"]}, { sql: "event = {p0:String} AND (distinct_id = {p1:String} OR NOT person_is_identified) AS c0", params: {"p0":"a","p1":"b"}}, "event = 'a' AND (distinct_id = 'b' OR NOT person_is_identified) AS c0"],
  ["event IN ('a', 'b')", { sql: "event IN (?, ?) AS c0", params: ["a","b"]}, { sql: "event IN ({p0:String}, {p1:String}) AS c0", params: {"p0":"a","p1":"b"}}, "event IN ('a', 'b') AS c0"],
  ["person_id NOT IN ('p1')", { sql: "COALESCE(person_id NOT IN (?), TRUE) AS c0", params: ["p1"]}, { sql: "coalesce(person_id NOT IN ({p0:String}), 1) AS c0", params: {"p0":"p1"}}, "coalesce(person_id NOT IN ('p1'), 1) AS c0"],
  ["event IN ('a', distinct_id)", { sql: "event IN (?, distinct_id) AS c0", params: ["a"]}, { sql: "(event = ({p0:String}) OR event = (distinct_id)) AS c0", params: {"p0":"a"}}, "(event = ('a') OR event = (distinct_id)) AS c0"],
  ["NULL NOT IN (1, 2)", { sql: "COALESCE(NULL NOT IN (?, ?), TRUE) AS c0", params: [1,2]}, { sql: "coalesce(NULL, 1) AS c0", params: {}}, "coalesce(NULL, 1) AS c0"],
  ["person_id IS NULL", { sql: "person_id IS NULL AS c0", params: []}, { sql: "person_id IS NULL AS c0", params: {}}, "person_id IS NULL AS c0"],
  ["person_id IS NOT NULL", { sql: "person_id IS NOT NULL AS c0", params: []}, { sql: "person_id IS NOT NULL AS c0", params: {}}, "person_id IS NOT NULL AS c0"],
  ["event LIKE '%view'", { sql: "event LIKE ? ESCAPE '\\' AS c0", params: ["%view"]}, { sql: "event LIKE {p0:String} AS c0", params: {"p0":"%view"}}, "event LIKE '%view' AS c0"],
  ["person_id NOT LIKE '%b\\\\_x%'", { sql: "COALESCE(person_id NOT LIKE ? ESCAPE '\\', TRUE) AS c0", params: ["%b\\_x%"]}, { sql: "coalesce(person_id NOT LIKE {p0:String}, 1) AS c0", params: {"p0":"%b\\_x%"}}, "coalesce(person_id NOT LIKE '%b\\\\_x%', 1) AS c0"],
  ["event ILIKE '%VIEW'", { sql: "event ILIKE ? ESCAPE '\\' AS c0", params: ["%VIEW"]}, { sql: "lowerUTF8(event) LIKE lowerUTF8({p0:String}) AS c0", params: {"p0":"%VIEW"}}, "lowerUTF8(event) LIKE lowerUTF8('%VIEW') AS c0"],
  ["person_id NOT ILIKE 'P%'", { sql: "COALESCE(person_id NOT ILIKE ? ESCAPE '\\', TRUE) AS c0", params: ["P%"]}, { sql: "coalesce(lowerUTF8(person_id) NOT LIKE lowerUTF8({p0:String}), 1) AS c0", params: {"p0":"P%"}}, "coalesce(lowerUTF8(person_id) NOT LIKE lowerUTF8('P%'), 1) AS c0"],
  ["properties.plan", { sql: "json_extract_string(properties, ?) AS c0", params: ["/plan"]}, { sql: "multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})) AS c0", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan"}}, "multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan')) AS c0"],
  ["properties.nested.x.y", { sql: "json_extract_string(properties, ?) AS c0", params: ["/nested/x/y"]}, { sql: "multiIf(JSONType(properties, {p0:String}, {p1:String}, {p2:String}) = 'String', JSONExtractString(properties, {p3:String}, {p4:String}, {p5:String}), JSONType(properties, {p6:String}, {p7:String}, {p8:String}) = 'Null', NULL, JSONExtractRaw(properties, {p9:String}, {p10:String}, {p11:String})) AS c0", params: {"p0":"nested","p1":"x","p2":"y","p3":"nested","p4":"x","p5":"y","p6":"nested","p7":"x","p8":"y","p9":"nested","p10":"x","p11":"y"}}, "multiIf(visitParamExtractRaw(visitParamExtractRaw(visitParamExtractRaw(properties, 'nested'), 'x'), 'y') IN ('', 'null'), NULL, substring(visitParamExtractRaw(visitParamExtractRaw(visitParamExtractRaw(properties, 'nested'), 'x'), 'y'), 1, 1) = '\"', visitParamExtractString(visitParamExtractRaw(visitParamExtractRaw(properties, 'nested'), 'x'), 'y'), visitParamExtractRaw(visitParamExtractRaw(visitParamExtractRaw(properties, 'nested'), 'x'), 'y')) AS c0"],
  ["person.properties.email", { sql: "json_extract_string(person_properties, ?) AS c0", params: ["/email"]}, { sql: "multiIf(JSONType(person_properties, {p0:String}) = 'String', JSONExtractString(person_properties, {p1:String}), JSONType(person_properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(person_properties, {p3:String})) AS c0", params: {"p0":"email","p1":"email","p2":"email","p3":"email"}}, "multiIf(visitParamExtractRaw(person_properties, 'email') IN ('', 'null'), NULL, substring(visitParamExtractRaw(person_properties, 'email'), 1, 1) = '\"', visitParamExtractString(person_properties, 'email'), visitParamExtractRaw(person_properties, 'email')) AS c0"],
  ["properties.$browser", { sql: "mat_browser AS c0", params: []}, { sql: "mat_browser AS c0", params: {}}, "mat_browser AS c0"],
  ["true", { sql: "? AS c0", params: [true]}, { sql: "{p0:UInt8} AS c0", params: {"p0":1}}, "1 AS c0"],
  ["NULL", { sql: "NULL AS c0", params: []}, { sql: "NULL AS c0", params: {}}, "NULL AS c0"],];

/** WHERE conditions: a positive position lets NULL stand for false. */
const CONDITIONS: Row<string>[] = [
  ["properties.plan = 'pro'", { sql: "json_extract_string(properties, ?) = ?", params: ["/plan","pro"]}, { sql: "multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})) = {p4:String}", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan","p4":"pro"}}, "multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan')) = 'pro'"],
  ["properties.plan != 'pro'", { sql: "json_extract_string(properties, ?) IS DISTINCT FROM ?", params: ["/plan","pro"]}, { sql: "NOT coalesce(multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})) = {p4:String}, isNull(multiIf(JSONType(properties, {p5:String}) = 'String', JSONExtractString(properties, {p6:String}), JSONType(properties, {p7:String}) = 'Null', NULL, JSONExtractRaw(properties, {p8:String}))) AND isNull({p9:String}))", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan","p4":"pro","p5":"plan","p6":"plan","p7":"plan","p8":"plan","p9":"pro"}}, "NOT coalesce(multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan')) = 'pro', isNull(multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan'))) AND isNull('pro'))"],
  ["event NOT IN ('a')", { sql: "event NOT IN (?)", params: ["a"]}, { sql: "event NOT IN ({p0:String})", params: {"p0":"a"}}, "event NOT IN ('a')"],
  ["properties.plan ILIKE '%PR%'", { sql: "json_extract_string(properties, ?) ILIKE ? ESCAPE '\\'", params: ["/plan","%PR%"]}, { sql: "lowerUTF8(multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String}))) LIKE lowerUTF8({p4:String})", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan","p4":"%PR%"}}, "lowerUTF8(multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan'))) LIKE lowerUTF8('%PR%')"],
  ["match(properties.plan, 'p')", { sql: "regexp_matches(json_extract_string(properties, ?), ?)", params: ["/plan","p"]}, { sql: "match(multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})), {p4:String})", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan","p4":"p"}}, "match(multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan')), 'p')"],];

/** The events list's property filters, one operator each. */
const FILTERS: Row<Record<string, unknown>>[] = [
  [{"key":"plan","value":"pro","operator":"exact"}, { sql: "json_extract_string(properties, ?) = ?", params: ["/plan","pro"]}, { sql: "multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})) = {p4:String}", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan","p4":"pro"}}, "multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan')) = 'pro'"],
  [{"key":"plan","value":["pro","free"],"operator":"is_not"}, { sql: "COALESCE(json_extract_string(properties, ?) NOT IN (?, ?), TRUE)", params: ["/plan","pro","free"]}, { sql: "coalesce(multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})) NOT IN ({p4:String}, {p5:String}), 1)", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan","p4":"pro","p5":"free"}}, "coalesce(multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan')) NOT IN ('pro', 'free'), 1)"],
  [{"key":"plan","value":"R","operator":"icontains"}, { sql: "json_extract_string(properties, ?) ILIKE ? ESCAPE '\\'", params: ["/plan","%R%"]}, { sql: "lowerUTF8(multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String}))) LIKE lowerUTF8({p4:String})", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan","p4":"%R%"}}, "lowerUTF8(multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan'))) LIKE lowerUTF8('%R%')"],
  [{"key":"plan","value":"^p","operator":"not_regex"}, { sql: "NOT COALESCE(regexp_matches(json_extract_string(properties, ?), ?), FALSE)", params: ["/plan","^p"]}, { sql: "NOT coalesce(match(multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})), {p4:String}), 0)", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan","p4":"^p"}}, "NOT coalesce(match(multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan')), '^p'), 0)"],
  [{"key":"price","value":10,"operator":"gte"}, { sql: "TRY_CAST(json_extract_string(properties, ?) AS DOUBLE) >= ?", params: ["/price",10]}, { sql: "toFloat64OrNull(multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String}))) >= {p4:Int64}", params: {"p0":"price","p1":"price","p2":"price","p3":"price","p4":10}}, "toFloat64OrNull(multiIf(visitParamExtractRaw(properties, 'price') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'price'), 1, 1) = '\"', visitParamExtractString(properties, 'price'), visitParamExtractRaw(properties, 'price'))) >= 10"],
  [{"key":"plan","operator":"is_not_set"}, { sql: "json_extract_string(properties, ?) IS NULL", params: ["/plan"]}, { sql: "multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})) IS NULL", params: {"p0":"plan","p1":"plan","p2":"plan","p3":"plan"}}, "multiIf(visitParamExtractRaw(properties, 'plan') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'plan'), 1, 1) = '\"', visitParamExtractString(properties, 'plan'), visitParamExtractRaw(properties, 'plan')) IS NULL"],
  [{"key":"signup_date","value":"2024-01-01","operator":"is_date_after"}, { sql: "CAST(TRY_CAST(json_extract_string(properties, ?) AS TIMESTAMPTZ) AS TIMESTAMP) > CAST(? AS TIMESTAMP)", params: ["/signup_date","2024-01-01 00:00:00.000000"]}, { sql: "parseDateTime64BestEffortOrNull(if(match(multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})), '^\\\\d{4}-\\\\d{1,2}-\\\\d{1,2}'), multiIf(JSONType(properties, {p4:String}) = 'String', JSONExtractString(properties, {p5:String}), JSONType(properties, {p6:String}) = 'Null', NULL, JSONExtractRaw(properties, {p7:String})), 'x'), 6, 'UTC') > toDateTime64({p8:String}, 6, 'UTC')", params: {"p0":"signup_date","p1":"signup_date","p2":"signup_date","p3":"signup_date","p4":"signup_date","p5":"signup_date","p6":"signup_date","p7":"signup_date","p8":"2024-01-01 00:00:00.000000"}}, "parseDateTimeBestEffortOrNull(if(match(multiIf(visitParamExtractRaw(properties, 'signup_date') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'signup_date'), 1, 1) = '\"', visitParamExtractString(properties, 'signup_date'), visitParamExtractRaw(properties, 'signup_date')), '^\\\\d{4}-\\\\d{1,2}-\\\\d{1,2}'), multiIf(visitParamExtractRaw(properties, 'signup_date') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'signup_date'), 1, 1) = '\"', visitParamExtractString(properties, 'signup_date'), visitParamExtractRaw(properties, 'signup_date')), 'x'), 'UTC') > toDateTime('2024-01-01 00:00:00', 'UTC')"],
  [{"key":"signup_date","value":"2024-01-03","operator":"is_date_exact"}, { sql: "CAST(CAST(TRY_CAST(json_extract_string(properties, ?) AS TIMESTAMPTZ) AS TIMESTAMP) AS DATE) = CAST(? AS DATE)", params: ["/signup_date","2024-01-03"]}, { sql: "toDate(parseDateTime64BestEffortOrNull(if(match(multiIf(JSONType(properties, {p0:String}) = 'String', JSONExtractString(properties, {p1:String}), JSONType(properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(properties, {p3:String})), '^\\\\d{4}-\\\\d{1,2}-\\\\d{1,2}'), multiIf(JSONType(properties, {p4:String}) = 'String', JSONExtractString(properties, {p5:String}), JSONType(properties, {p6:String}) = 'Null', NULL, JSONExtractRaw(properties, {p7:String})), 'x'), 6, 'UTC')) = toDate({p8:String})", params: {"p0":"signup_date","p1":"signup_date","p2":"signup_date","p3":"signup_date","p4":"signup_date","p5":"signup_date","p6":"signup_date","p7":"signup_date","p8":"2024-01-03"}}, "toDate(parseDateTimeBestEffortOrNull(if(match(multiIf(visitParamExtractRaw(properties, 'signup_date') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'signup_date'), 1, 1) = '\"', visitParamExtractString(properties, 'signup_date'), visitParamExtractRaw(properties, 'signup_date')), '^\\\\d{4}-\\\\d{1,2}-\\\\d{1,2}'), multiIf(visitParamExtractRaw(properties, 'signup_date') IN ('', 'null'), NULL, substring(visitParamExtractRaw(properties, 'signup_date'), 1, 1) = '\"', visitParamExtractString(properties, 'signup_date'), visitParamExtractRaw(properties, 'signup_date')), 'x'), 'UTC')) = toDate('2024-01-03')"],
  [{"key":"email","value":"ann@x.com","type":"person"}, { sql: "json_extract_string(person_properties, ?) = ?", params: ["/email","ann@x.com"]}, { sql: "multiIf(JSONType(person_properties, {p0:String}) = 'String', JSONExtractString(person_properties, {p1:String}), JSONType(person_properties, {p2:String}) = 'Null', NULL, JSONExtractRaw(person_properties, {p3:String})) = {p4:String}", params: {"p0":"email","p1":"email","p2":"email","p3":"email","p4":"ann@x.com"}}, "multiIf(visitParamExtractRaw(person_properties, 'email') IN ('', 'null'), NULL, substring(visitParamExtractRaw(person_properties, 'email'), 1, 1) = '\"', visitParamExtractString(person_properties, 'email'), visitParamExtractRaw(person_properties, 'email')) = 'ann@x.com'"],];

describe('each function and operator in each dialect', () => {
  test.each(SELECTED)('select %s', (expr, duckdb, clickhouse, clickhouse18) => {
    expect(inEach((d) => {
      const c = compileSelect([expr], [], NOW, d);
      return { sql: c.selectSql, params: c.selectParams };
    })).toEqual([duckdb, clickhouse, { sql: clickhouse18, params: {} }]);
  });

  test.each(CONDITIONS)('where %s', (expr, duckdb, clickhouse, clickhouse18) => {
    expect(inEach((d) => {
      const c = compileSelect(['count()'], [expr], NOW, d);
      return { sql: c.whereSql ?? '', params: c.whereParams };
    })).toEqual([duckdb, clickhouse, { sql: clickhouse18, params: {} }]);
  });

  test.each(FILTERS)('filter %j', (filter, duckdb, clickhouse, clickhouse18) => {
    expect(inEach((d) => compileEventFilters({ properties: JSON.stringify([filter]) }, NOW, { dialect: d, timeBounds: false })))
      .toEqual([duckdb, clickhouse, { sql: clickhouse18, params: {} }]);
  });

  test('every function of the catalog has a case', () => {
    const called = new Set(SELECTED.flatMap(([expr]) => [...expr.matchAll(/([A-Za-z]+)\(/g)].map((m) => m[1]!.toLowerCase())));
    expect(FUNCTION_NAMES.filter((name) => !called.has(name))).toEqual([]);
  });
});

describe('ClickHouse rendering', () => {
  test('values become typed, numbered parameters; floats travel as text (the client refuses numbers past 2^53)', () => {
    const f = { sql: 'f({?:String}, {?:Int64}, {?:Float64}, {?:Float64}, {?:UInt8})', params: ['a', -3, 2.5, 1e26, false] };
    expect(CLICKHOUSE.render(f)).toEqual({
      sql: 'f({p0:String}, {p1:Int64}, {p2:Float64}, {p3:Float64}, {p4:UInt8})',
      params: { p0: 'a', p1: -3, p2: '2.5', p3: '1e+26', p4: 0 },
    });
  });

  test('without query parameters, values are literals escaped as ClickHouse reads them', () => {
    const f = { sql: 'f({?:String}, {?:Int64}, {?:Float64}, {?:UInt8})', params: ["it's \\ a\n\u0000b", -3, 1e26, true] };
    expect(CLICKHOUSE_18.render(f)).toEqual({ sql: "f('it\\'s \\\\ a\\n\\0b', (-3), 1e+26, 1)", params: {} });
  });

  test('placeholders and values must agree', () => {
    expect(() => CLICKHOUSE.render({ sql: '{?:String}', params: [] })).toThrow('placeholders and params disagree');
    expect(() => CLICKHOUSE.render({ sql: '{?:String}', params: [1] })).toThrow('placeholders and params disagree');
    expect(() => CLICKHOUSE_18.render({ sql: 'x', params: ['a'] })).toThrow('placeholders and params disagree');
  });

  test('identifiers are quoted the engine\'s way', () => {
    expect([DUCKDB, CLICKHOUSE].map((d) => d.quoteIdentifier('a"b`c\\d'))).toEqual(['"a""b`c\\d"', '`a"b\\`c\\\\d`']);
  });

  test.each([
    ['18.16.1', false],
    ['19.17.4.11', false],
    ['20.1.2.4', true],
    ['26.7.2.1', true],
  ])('version %s: modern %p', (version, modern) => {
    expect(clickhouseFeatures(version)).toEqual({ datetime64: modern, jsonExtract: modern, queryParams: modern, mutationsSync: modern });
  });
});
