//! The CEL environment rules are compiled and run in, built on the `cel` crate's standard library (operators,
//! `size`, `has`, the macros `all`, `exists`, `exists_one`, `map` and `filter`, `matches`, `startsWith`,
//! `endsWith`, `contains`, conversions, `duration`/`timestamp` and their accessors, optional values with `.?` and
//! `optional.*`) and its strings and lists extensions, which are cel-go's `ext.Strings` (`lowerAscii`,
//! `upperAscii`, `indexOf`, `lastIndexOf`, `charAt`, `replace`, `split`, `join`, `substring`, `trim`, `format`,
//! `strings.quote`) and `ext.Lists` (`slice`, `flatten`, `distinct`, `reverse`, `sort`, `sortBy`, `lists.range`)
//! that kube's environment has. Added here, from Kubernetes' library (`k8s.io/apiserver/pkg/cel/library`): the
//! list functions `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` and `includes` (kube 1.37), the regex
//! functions `find` and `findAll`, `isURL` (see `urls.rs`), the quantity library (`quantity`, `isQuantity` and the
//! `kubernetes.Quantity` methods, see `quantity.rs`), and cel-go's `sets.contains`, `sets.equivalent` and
//! `sets.intersects`.
//!
//! Not available: kube's `url` type and its accessors, `ip`/`cidr`, `format.*` and `semver` types, two-variable
//! comprehensions (`all(k, v, ...)`, `transformList`, ...), and the authorizer (which CRD rules do not have).
//!
//! The environment rules compile in adds two internal functions that measure cost ([`super::program::env`]).

use std::cmp::Ordering;

use ::cel::common::traits::Iterable;
use ::cel::common::types::{CelBool, CelInt, CelList, CelString, DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use ::cel::common::value::{CowVal, Val};
use ::cel::{Env, ExecutionError};

use super::values::string_arg;

/// The functions rules may call: CEL's standard library with the strings and lists extensions, and kube's
/// libraries above. Registers a few hundred overloads: built once ([`super::program::env`]).
pub(super) fn build() -> Env {
    let mut env = Env::stdlib();
    // Declaring these cannot fail but through a clash of names, which the unit tests would show at once.
    env.add_extension(::cel::extensions::strings)
        .expect("strings extension");
    env.add_extension(::cel::extensions::lists).expect("lists extension");
    let member = [
        (
            "isSorted",
            "list_is_sorted",
            LIST_TYPE,
            vec![],
            is_sorted as ::cel::common::functions::Function,
        ),
        ("sum", "list_sum", LIST_TYPE, vec![], sum),
        ("min", "list_min", LIST_TYPE, vec![], min),
        ("max", "list_max", LIST_TYPE, vec![], max),
        ("indexOf", "list_index_of", LIST_TYPE, vec![DYN_TYPE], index_of),
        (
            "lastIndexOf",
            "list_last_index_of",
            LIST_TYPE,
            vec![DYN_TYPE],
            last_index_of,
        ),
        ("includes", "dyn_includes", DYN_TYPE, vec![DYN_TYPE], includes),
        ("find", "string_find", STRING_TYPE, vec![STRING_TYPE], find),
        ("findAll", "string_find_all", STRING_TYPE, vec![STRING_TYPE], find_all),
        (
            "findAll",
            "string_find_all_n",
            STRING_TYPE,
            vec![STRING_TYPE, INT_TYPE],
            find_all_n,
        ),
    ];
    for (name, id, target, args, op) in member {
        env.add_member_overload(name, id, target, args, op)
            .expect("kube list and regex functions");
    }
    let global = [
        (
            "sets.contains",
            "sets_contains",
            vec![LIST_TYPE, LIST_TYPE],
            sets_contains as ::cel::common::functions::Function,
        ),
        (
            "sets.equivalent",
            "sets_equivalent",
            vec![LIST_TYPE, LIST_TYPE],
            sets_equivalent,
        ),
        (
            "sets.intersects",
            "sets_intersects",
            vec![LIST_TYPE, LIST_TYPE],
            sets_intersects,
        ),
        ("isURL", "is_url_string", vec![STRING_TYPE], super::urls::is_url),
    ];
    for (name, id, args, op) in global {
        env.add_overload(name, id, args, op).expect("sets and URL functions");
    }
    add_quantity(&mut env);
    env
}

/// Kube's quantity library (see `quantity.rs`).
fn add_quantity(env: &mut Env) {
    use super::quantity as q;
    let quantity = || q::QUANTITY_TYPE.to_owned();
    env.add_type(quantity()).expect("the quantity type");
    let global = [
        (
            "quantity",
            "string_to_quantity",
            STRING_TYPE,
            q::quantity as ::cel::common::functions::Function,
        ),
        ("isQuantity", "is_quantity_string", STRING_TYPE, q::is_quantity),
        ("sign", "quantity_sign", quantity(), q::sign),
    ];
    for (name, id, arg, op) in global {
        env.add_overload(name, id, vec![arg], op).expect("quantity functions");
    }
    let member = [
        (
            "isInteger",
            "quantity_is_integer",
            vec![],
            q::is_integer as ::cel::common::functions::Function,
        ),
        ("asInteger", "quantity_get_int", vec![], q::as_integer),
        (
            "asApproximateFloat",
            "quantity_get_float",
            vec![],
            q::as_approximate_float,
        ),
        (
            "isGreaterThan",
            "quantity_is_greater_than",
            vec![quantity()],
            q::is_greater_than,
        ),
        ("isLessThan", "quantity_is_less_than", vec![quantity()], q::is_less_than),
        ("compareTo", "quantity_compare_to", vec![quantity()], q::compare_to),
        ("add", "quantity_add", vec![quantity()], q::add),
        ("add", "quantity_add_int", vec![INT_TYPE], q::add),
        ("sub", "quantity_sub", vec![quantity()], q::sub),
        ("sub", "quantity_sub_int", vec![INT_TYPE], q::sub),
    ];
    for (name, id, args, op) in member {
        env.add_member_overload(name, id, quantity(), args, op)
            .expect("quantity methods");
    }
}

/// The elements of a list argument.
fn elements<'b, 'v>(list: &'b (dyn Val + 'v)) -> Result<Items<'b, 'v>, ExecutionError> {
    let iterable: &'b (dyn Iterable + 'v) = list.as_iterable().ok_or_else(|| ExecutionError::UnexpectedType {
        got: list.get_type().name().to_owned(),
        want: "list".to_owned(),
    })?;
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

fn compare(a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| {
            ExecutionError::no_such_overload("_<_", vec![a.get_type().name().into(), b.get_type().name().into()])
        })?
        .compare(b)
}

fn boolean<'b, 'v>(b: bool) -> CowVal<'b, 'v> {
    CowVal::owned(CelBool::from(b))
}

fn int<'b, 'v>(i: i64) -> CowVal<'b, 'v> {
    CowVal::owned(CelInt::from(i))
}

fn first(args: &[CowVal<'_, '_>]) -> Result<usize, ExecutionError> {
    if args.is_empty() {
        return Err(ExecutionError::missing_argument_or_target());
    }
    Ok(0)
}

/// `<list>.isSorted()`: whether no element is greater than the next.
fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(args[first(&args)?].as_ref())?;
    for pair in items.windows(2) {
        if compare(pair[0], pair[1])? == Ordering::Greater {
            return Ok(boolean(false));
        }
    }
    Ok(boolean(true))
}

/// `<list>.sum()`: the sum of the elements, `0` for an empty list.
fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(args[first(&args)?].as_ref())?;
    let Some((head, rest)) = items.split_first() else {
        return Ok(int(0));
    };
    let mut acc: Box<dyn Val + 'v> = head.clone_as_boxed();
    for item in rest {
        let next = acc
            .as_adder()
            .ok_or_else(|| ExecutionError::no_such_overload("sum", vec![acc.get_type().name().into()]))?
            .add(*item)?
            .into_owned();
        acc = next;
    }
    Ok(CowVal::Owned(acc))
}

fn extreme<'b, 'v>(args: Vec<CowVal<'b, 'v>>, name: &str, keep: Ordering) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(args[first(&args)?].as_ref())?;
    let mut best: Option<&(dyn Val + 'v)> = None;
    for item in items {
        best = match best {
            Some(b) if compare(item, b)? != keep => Some(b),
            _ => Some(item),
        };
    }
    best.map(|b| CowVal::Owned(b.clone_as_boxed()))
        .ok_or_else(|| ExecutionError::function_error(name, format!("{name} called on empty list")))
}

/// `<list>.min()`: the least element; an error for an empty list.
fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "min", Ordering::Less)
}

/// `<list>.max()`: the greatest element; an error for an empty list.
fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "max", Ordering::Greater)
}

fn position(args: &[CowVal<'_, '_>], last: bool) -> Result<i64, ExecutionError> {
    let [list, item] = args else {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    };
    let items = elements(list.as_ref())?;
    let found = if last {
        items.iter().rposition(|e| e.equals(item.as_ref()))
    } else {
        items.iter().position(|e| e.equals(item.as_ref()))
    };
    Ok(found.map_or(-1, |i| i as i64))
}

/// `<list>.indexOf(x)`: the first index of `x`, or -1.
fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(&args, false).map(int)
}

/// `<list>.lastIndexOf(x)`: the last index of `x`, or -1.
fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(&args, true).map(int)
}

/// `<dyn>.includes(x)` (kube 1.37): whether the target list holds `x`, or the target equals `x`.
fn includes<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [target, item] = args.as_slice() else {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    };
    if target.get_type().kind() == ::cel::common::types::Kind::List {
        return Ok(boolean(
            elements(target.as_ref())?.iter().any(|e| e.equals(item.as_ref())),
        ));
    }
    Ok(boolean(target.equals(item.as_ref())))
}

fn regex_args(args: &[CowVal<'_, '_>]) -> Result<(String, regex::Regex), ExecutionError> {
    let (Some(text), Some(pattern)) = (args.first(), args.get(1)) else {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    };
    let re = regex::Regex::new(string_arg(pattern)?)
        .map_err(|e| ExecutionError::function_error("find", format!("given regex is invalid: {e}")))?;
    Ok((string_arg(text)?.to_owned(), re))
}

fn strings<'b, 'v>(items: Vec<String>) -> CowVal<'b, 'v> {
    let items: Vec<Box<dyn Val + 'v>> = items
        .into_iter()
        .map(|s| Box::new(CelString::from(s)) as Box<dyn Val + 'v>)
        .collect();
    CowVal::owned(CelList::from(items))
}

/// `<string>.find(regex)`: the first match, or the empty string.
fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (text, re) = regex_args(&args)?;
    let found = re.find(&text).map(|m| m.as_str().to_owned()).unwrap_or_default();
    Ok(CowVal::owned(CelString::from(found)))
}

/// `<string>.findAll(regex)`: every match.
fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (text, re) = regex_args(&args)?;
    Ok(strings(re.find_iter(&text).map(|m| m.as_str().to_owned()).collect()))
}

/// `<string>.findAll(regex, n)`: at most `n` matches (all of them for a negative `n`).
fn find_all_n<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (text, re) = regex_args(&args)?;
    let limit = args
        .get(2)
        .and_then(|n| n.downcast_ref::<CelInt>())
        .map_or(-1, |n| *n.inner());
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    Ok(strings(
        re.find_iter(&text).take(limit).map(|m| m.as_str().to_owned()).collect(),
    ))
}

/// The elements of a list, borrowed.
type Items<'a, 'v> = Vec<&'a (dyn Val + 'v)>;

fn two_lists<'a, 'b, 'v>(args: &'a [CowVal<'b, 'v>]) -> Result<(Items<'a, 'v>, Items<'a, 'v>), ExecutionError> {
    let [a, b] = args else {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    };
    Ok((elements(a.as_ref())?, elements(b.as_ref())?))
}

fn holds_all(list: &[&dyn Val], items: &[&dyn Val]) -> bool {
    items.iter().all(|i| list.iter().any(|e| e.equals(*i)))
}

/// `sets.contains(list, sublist)`: whether every element of `sublist` is in `list`.
fn sets_contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists(&args)?;
    Ok(boolean(holds_all(&a, &b)))
}

/// `sets.equivalent(a, b)`: whether the two lists hold the same elements, ignoring order and repeats.
fn sets_equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists(&args)?;
    Ok(boolean(holds_all(&a, &b) && holds_all(&b, &a)))
}

/// `sets.intersects(a, b)`: whether the two lists share an element.
fn sets_intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists(&args)?;
    Ok(boolean(b.iter().any(|i| a.iter().any(|e| e.equals(*i)))))
}
